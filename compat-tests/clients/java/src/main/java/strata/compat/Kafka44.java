package strata.compat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ExpireDelegationTokenOptions;
import org.apache.kafka.clients.admin.FinalizedVersionRange;
import org.apache.kafka.clients.admin.ListConfigResourcesOptions;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.security.token.delegation.DelegationToken;

/** The scenarios of the Kafka 4.4 capabilities (compat-tests/README.md): transactions_v2, group_configs, delegation_token. */
final class Kafka44 {
    private Kafka44() {}

    /** Runs one of the Kafka 4.4 scenarios. */
    static String run(Runner r, String scenario) throws Exception {
        switch (scenario) {
            case "transactions_v2": return transactionsV2(r);
            case "group_configs": return groupConfigs(r);
            case "delegation_token": return delegationToken(r);
            case "fetch_sessions": return Kafka44Groups.fetchSessions(r);
            case "group_consumer_restart": return Kafka44Groups.groupConsumerRestart(r);
            default: throw new IllegalArgumentException(scenario);
        }
    }

    /**
     * transactions_v2: the transactions of Scenarios.K44.TXN_V2_ENDS from one transactional id under transaction.version 2
     * (KIP-890 part 2): describeProducers after each end shows one producer, its epoch one above the previous end's,
     * and read_committed sees exactly the committed transactions' records, read_uncommitted all of them.
     */
    static String transactionsV2(Runner r) throws Exception {
        TopicPartition tp = new TopicPartition(r.topic, 0);
        List<Integer> epochs = new ArrayList<>();
        List<String> committed = new ArrayList<>(), all = new ArrayList<>();
        try (Admin admin = r.admin()) {
            r.ensureTopic(admin, r.topic, 1);
            FinalizedVersionRange tv = admin.describeFeatures().featureMetadata().get(20, TimeUnit.SECONDS).finalizedFeatures().get("transaction.version");
            short level = tv == null ? 0 : tv.maxVersionLevel();
            r.data.put("transaction_version", level);
            if (level < 2) throw Runner.fail("the broker finalizes transaction.version " + level + ", want 2");
            long pid = -1;
            try (KafkaProducer<byte[], byte[]> p = r.producer(Map.of(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "compat-java-tv2-" + r.topic,
                    ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true))) {
                p.initTransactions();
                for (int t = 0; t < Scenarios.K44.TXN_V2_ENDS.size(); t++) {
                    boolean commit = Scenarios.K44.TXN_V2_ENDS.get(t).equals("commit");
                    p.beginTransaction();
                    for (int i = 0; i < Scenarios.K44.TXN_V2_RECORDS; i++) {
                        String v = Scenarios.txnV2Value(t, i);
                        p.send(new ProducerRecord<>(r.topic, 0, null, Runner.b(v)));
                        all.add(v);
                        if (commit) committed.add(v);
                    }
                    if (commit) {
                        p.commitTransaction();
                    } else {
                        p.flush();
                        p.abortTransaction();
                    }
                    // The coordinator writes the markers after the end returns: wait until the producer has no open transaction.
                    List<ProducerState> ps;
                    long until = System.currentTimeMillis() + 10_000;
                    do {
                        ps = admin.describeProducers(List.of(tp)).partitionResult(tp).get(20, TimeUnit.SECONDS).activeProducers();
                    } while ((ps.size() != 1 || ps.get(0).currentTransactionStartOffset().isPresent()) && System.currentTimeMillis() < until && sleep());
                    if (ps.size() != 1 || ps.get(0).currentTransactionStartOffset().isPresent())
                        throw Runner.fail("describeProducers after transaction " + t + ": " + ps + ", want one producer without an open transaction");
                    if (pid >= 0 && ps.get(0).producerId() != pid) throw Runner.fail("producer id " + ps.get(0).producerId() + " after transaction " + t + ", " + pid + " before");
                    pid = ps.get(0).producerId();
                    epochs.add(ps.get(0).producerEpoch());
                }
            }
        }
        r.data.put("described_epochs", epochs);
        for (int t = 1; t < epochs.size(); t++) {
            if (epochs.get(t) != epochs.get(t - 1) + 1) throw Runner.fail("describeProducers epochs after the transactions' ends " + epochs + ": want one bump per transaction");
        }
        List<String> rc = read(r, tp, "read_committed"), ru = read(r, tp, "read_uncommitted");
        if (!rc.equals(committed)) throw Runner.fail("read_committed saw " + rc + ", want " + committed);
        if (!ru.equals(all)) throw Runner.fail("read_uncommitted saw " + ru + ", want " + all);
        return "transaction.version 2: " + epochs.size() + " transactions (" + String.join(", ", Scenarios.K44.TXN_V2_ENDS) + "), describeProducers epochs "
                + epochs + "; read_committed saw the " + committed.size() + " committed records only, read_uncommitted all " + all.size();
    }

    /** Every record of tp up to its end offset at the isolation level, values in order. */
    static List<String> read(Runner r, TopicPartition tp, String isolation) {
        List<String> vals = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> c = r.consumer(Map.of(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation))) {
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            long end = c.endOffsets(List.of(tp)).get(tp);
            long until = Math.min(r.deadline, System.currentTimeMillis() + 20_000);
            while (c.position(tp) < end && System.currentTimeMillis() < until) {
                for (ConsumerRecord<byte[], byte[]> rec : c.poll(Duration.ofMillis(500))) vals.add(Runner.s(rec.value()));
            }
            for (ConsumerRecord<byte[], byte[]> rec : c.poll(Duration.ofMillis(300))) vals.add(Runner.s(rec.value()));
        }
        return vals;
    }

    /**
     * group_configs: incrementalAlterConfigs sets the group's Scenarios.K44.GROUP_CONFIG_NAME; describeConfigs on the GROUP
     * resource must show it with source DYNAMIC_GROUP_CONFIG and listConfigResources(GROUP) must list the group.
     */
    static String groupConfigs(Runner r) throws Exception {
        String g = Scenarios.group(r.topic, r.args);
        long until;
        ConfigResource res = new ConfigResource(ConfigResource.Type.GROUP, g);
        try (Admin admin = r.admin()) {
            String value = setGroupConfig(r, admin, g, Scenarios.K44.GROUP_CONFIG_NAME, Scenarios.K44.GROUP_CONFIG_VALUE);
            // Each request goes to any broker, which may not have applied it yet.
            Collection<ConfigResource> listed;
            until = System.currentTimeMillis() + 30_000;
            do {
                listed = admin.listConfigResources(Set.of(ConfigResource.Type.GROUP), new ListConfigResourcesOptions()).all().get(20, TimeUnit.SECONDS);
            } while (!listed.contains(res) && System.currentTimeMillis() < until && sleep());
            if (!listed.contains(res)) throw Runner.fail("listConfigResources(GROUP) lists " + listed + ", not " + g);
            return "GROUP " + g + ": " + Scenarios.K44.GROUP_CONFIG_NAME + "=" + value + " (DYNAMIC_GROUP_CONFIG); listConfigResources(GROUP) lists it among " + listed.size();
        }
    }

    /**
     * delegation_token (secure columns): as the SCRAM user of the arguments create a delegation token, describe it, log in
     * with it (SCRAM-SHA-256, tokenauth=true) to produce the auth records and consume them back, expire it; a login
     * with it must then be refused with an authentication error within the refusal bound.
     */
    static String delegationToken(Runner r) throws Exception {
        DelegationToken tok;
        try (Admin admin = r.admin()) {
            tok = admin.createDelegationToken().delegationToken().get(20, TimeUnit.SECONDS);
            String owner = tok.tokenInfo().ownerAsString();
            if (!owner.equals("User:" + r.args.get("sasl.username"))) throw Runner.fail("the token's owner is " + owner + ", want User:" + r.args.get("sasl.username"));
            // Kafka's brokers learn of the token from the metadata log, after the controller answered: its logins work
            // once describeDelegationToken lists it.
            boolean listed = false;
            for (long until = System.currentTimeMillis() + 10_000; !listed && System.currentTimeMillis() < until && sleep(); ) {
                for (DelegationToken d : admin.describeDelegationToken().delegationTokens().get(20, TimeUnit.SECONDS))
                    listed |= d.tokenInfo().tokenId().equals(tok.tokenInfo().tokenId());
            }
            if (!listed) throw Runner.fail("describeDelegationToken does not list the new token within 10 s");
            Map<String, Object> login = new HashMap<>();
            login.put("sasl.mechanism", "SCRAM-SHA-256");
            login.put("sasl.jaas.config", "org.apache.kafka.common.security.scram.ScramLoginModule required username=\"" + tok.tokenInfo().tokenId()
                    + "\" password=\"" + tok.hmacAsBase64String() + "\" tokenauth=\"true\";");
            List<String> want = new ArrayList<>(), seen = new ArrayList<>();
            try (KafkaProducer<byte[], byte[]> p = r.producer(login)) {
                List<Future<RecordMetadata>> fs = new ArrayList<>();
                for (int i = 0; i < Scenarios.AUTH_RECORDS; i++) {
                    want.add(Scenarios.AUTH_KEY_PREFIX + i + "=" + Scenarios.AUTH_VALUE_PREFIX + i);
                    fs.add(p.send(new ProducerRecord<>(r.topic, 0, Runner.b(Scenarios.AUTH_KEY_PREFIX + i), Runner.b(Scenarios.AUTH_VALUE_PREFIX + i))));
                }
                p.flush();
                for (Future<RecordMetadata> f : fs) f.get(20, TimeUnit.SECONDS);
            } catch (Exception e) {
                throw Runner.fail("produce with the token: " + Runner.describe(e));
            }
            try (KafkaConsumer<byte[], byte[]> c = r.consumer(login)) {
                for (ConsumerRecord<byte[], byte[]> rec : r.readAll(c, Runner.partitions(r.topic, 1), Scenarios.AUTH_RECORDS, 20_000))
                    seen.add(Runner.s(rec.key()) + "=" + Runner.s(rec.value()));
            }
            if (!seen.equals(want)) throw Runner.fail("consumed with the token " + seen + ", want " + want);
            admin.expireDelegationToken(tok.hmac(), new ExpireDelegationTokenOptions().expiryTimePeriodMs(-1)).expiryTimestamp().get(20, TimeUnit.SECONDS);
            String err = null;
            long until = System.currentTimeMillis() + Scenarios.AUTH_REFUSAL_BOUND_MS;
            while (err == null && System.currentTimeMillis() < until) {
                try (KafkaProducer<byte[], byte[]> p = r.producer(withBlock(login, 5_000))) {
                    p.send(new ProducerRecord<>(r.topic, 0, null, Runner.b("expired"))).get(5_000, TimeUnit.MILLISECONDS);
                } catch (Exception e) {
                    err = Runner.describe(e);
                }
            }
            if (err == null) throw Runner.fail("the expired token still logs in after " + Scenarios.AUTH_REFUSAL_BOUND_MS + " ms");
            r.data.put("error", err);
            if (!err.toLowerCase().contains("authentication")) throw Runner.fail("the expired token's login failed, but not with an authentication error: " + err);
            return "a token of " + tok.tokenInfo().ownerAsString() + ": produced and consumed " + seen.size() + " records with it, expired it, then refused: " + err;
        }
    }

    /**
     * Sets group g's config name to value with incrementalAlterConfigs and waits until describeConfigs shows it with source
     * DYNAMIC_GROUP_CONFIG; the value.
     */
    static String setGroupConfig(Runner r, Admin admin, String g, String name, String want) throws Exception {
        ConfigResource res = new ConfigResource(ConfigResource.Type.GROUP, g);
        admin.incrementalAlterConfigs(Map.of(res, List.of(new AlterConfigOp(new ConfigEntry(name, want), AlterConfigOp.OpType.SET)))).all().get(20, TimeUnit.SECONDS);
        String value = "(absent)", source = "";
        // Kafka's brokers apply it from the metadata log, on a loaded machine's cluster tens of seconds after the controller.
        long until = System.currentTimeMillis() + 30_000;
        while (true) {
            Config c = admin.describeConfigs(List.of(res)).all().get(20, TimeUnit.SECONDS).get(res);
            ConfigEntry e = c == null ? null : c.get(name);
            if (e != null) { value = e.value(); source = String.valueOf(e.source()); }
            if ((want.equals(value) && source.equals("DYNAMIC_GROUP_CONFIG")) || System.currentTimeMillis() > until) break;
            Thread.sleep(200);
        }
        r.data.put("value", value);
        r.data.put("source", source);
        if (!want.equals(value) || !source.equals("DYNAMIC_GROUP_CONFIG"))
            throw Runner.fail("describeConfigs GROUP " + g + " shows " + name + "=" + value + " (source " + source + "), want " + want + " (DYNAMIC_GROUP_CONFIG)");
        return value;
    }

    static boolean sleep() {
        try {
            Thread.sleep(200);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return true;
    }

    static Map<String, Object> withBlock(Map<String, Object> m, long ms) {
        Map<String, Object> out = new HashMap<>(m);
        out.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, ms);
        return out;
    }
}
