package strata.compat;

import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.TopicPartition;

/** The Kafka 4.4 scenarios of fetching and groups (compat-tests/README.md): fetch_sessions, group_consumer_restart. */
final class Kafka44Groups {
    private Kafka44Groups() {}

    /** The FetchSessionHandler log lines fetch_sessions counts, and those that must not appear (a session the broker refused). */
    static final String[] SESSION_LINES = {"Built incremental fetch", "created a new incremental fetch session", "sent an incremental fetch response"};
    static final String[] SESSION_ERRORS = {"was unable to process the fetch request", "sent an invalid", "was likely evicted"};

    /** Produces Scenarios.K44.FETCH_RECORDS records valued Scenarios.fetchValue(round, p, i) to each of the first n partitions. */
    static void produceRound(Runner r, int round, int n) throws Exception {
        try (KafkaProducer<byte[], byte[]> p = r.producer(Map.of(ProducerConfig.LINGER_MS_CONFIG, 20, ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 60_000,
                ProducerConfig.MAX_BLOCK_MS_CONFIG, 60_000))) {
            List<java.util.concurrent.Future<?>> fs = new ArrayList<>();
            for (int part = 0; part < n; part++)
                for (int i = 0; i < Scenarios.K44.FETCH_RECORDS; i++)
                    fs.add(p.send(new ProducerRecord<>(r.topic, part, null, Runner.b(Scenarios.fetchValue(round, part, i)))));
            p.flush();
            for (var f : fs) f.get(65, TimeUnit.SECONDS);
        }
    }

    /**
     * fetch_sessions: Scenarios.K44.FETCH_RECORDS records on each partition of the scenario's topic, then as many again on
     * its first Scenarios.K44.FETCH_SECOND_ROUND partitions while one consumer of every partition polls; it must see every
     * record once in offset order, and its FetchSessionHandler (logging at trace, its lines counted off stderr) must have
     * sent incremental fetches in a session the broker opened, with no session refused.
     */
    static String fetchSessions(Runner r) throws Exception {
        int parts = Scenarios.partitions("fetch_sessions");
        try (Admin admin = r.admin()) {
            r.ensureTopic(admin, r.topic, parts);
        }
        produceRound(r, 0, parts);
        System.setProperty("org.slf4j.simpleLogger.log.org.apache.kafka.clients.FetchSessionHandler", "trace");
        ByteArrayOutputStream log = new ByteArrayOutputStream();
        PrintStream stderr = System.err;
        System.setErr(new PrintStream(new OutputStream() {
            @Override public synchronized void write(int b) { stderr.write(b); log.write(b); }
            @Override public synchronized void write(byte[] b, int off, int len) { stderr.write(b, off, len); log.write(b, off, len); }
        }, true));
        Map<Integer, List<String>> got = new TreeMap<>();
        Map<Integer, List<Long>> offsets = new TreeMap<>();
        int total = (parts + Scenarios.K44.FETCH_SECOND_ROUND) * Scenarios.K44.FETCH_RECORDS;
        try (KafkaConsumer<byte[], byte[]> c = r.consumer(Map.of(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, 2000))) {
            List<TopicPartition> tps = Runner.partitions(r.topic, parts);
            c.assign(tps);
            c.seekToBeginning(tps);
            int n = 0;
            long until = r.deadline;
            boolean second = false;
            while (n < total && System.currentTimeMillis() < until) {
                for (ConsumerRecord<byte[], byte[]> rec : c.poll(Duration.ofMillis(500))) {
                    got.computeIfAbsent(rec.partition(), k -> new ArrayList<>()).add(Runner.s(rec.value()));
                    offsets.computeIfAbsent(rec.partition(), k -> new ArrayList<>()).add(rec.offset());
                    n++;
                }
                if (!second && n >= parts * Scenarios.K44.FETCH_RECORDS) {
                    second = true;
                    produceRound(r, 1, Scenarios.K44.FETCH_SECOND_ROUND);
                }
            }
            for (ConsumerRecord<byte[], byte[]> rec : c.poll(Duration.ofMillis(1000))) {
                got.computeIfAbsent(rec.partition(), k -> new ArrayList<>()).add(Runner.s(rec.value()));
                offsets.computeIfAbsent(rec.partition(), k -> new ArrayList<>()).add(rec.offset());
            }
        } finally {
            System.setErr(stderr);
        }
        String text = log.toString(StandardCharsets.UTF_8);
        Map<String, Integer> counts = new TreeMap<>();
        for (String s : SESSION_LINES) counts.put(s, count(text, s));
        for (String s : SESSION_ERRORS) counts.put(s, count(text, s));
        r.data.put("session_log", counts);
        for (int p = 0; p < parts; p++) {
            List<String> want = new ArrayList<>();
            List<Long> wantOff = new ArrayList<>();
            for (int round = 0; round < 2 && (round == 0 || p < Scenarios.K44.FETCH_SECOND_ROUND); round++)
                for (int i = 0; i < Scenarios.K44.FETCH_RECORDS; i++) { want.add(Scenarios.fetchValue(round, p, i)); wantOff.add((long) wantOff.size()); }
            if (!want.equals(got.getOrDefault(p, List.of())) || !wantOff.equals(offsets.getOrDefault(p, List.of())))
                throw Runner.fail("partition " + p + ": consumed " + got.get(p) + " at offsets " + offsets.get(p) + ", want " + want + " at " + wantOff);
        }
        for (String s : SESSION_LINES) if (counts.get(s) == 0) throw Runner.fail("every record once, but the consumer's FetchSessionHandler never logged \"" + s + "\": " + counts);
        for (String s : SESSION_ERRORS) if (counts.get(s) > 0) throw Runner.fail("every record once, but the consumer's FetchSessionHandler logged \"" + s + "\": " + counts);
        return total + " records from " + parts + " partitions, each once in offset order; incremental fetch sessions: " + counts;
    }

    static int count(String text, String what) {
        int n = 0;
        for (int i = text.indexOf(what); i >= 0; i = text.indexOf(what, i + 1)) n++;
        return n;
    }

    /** The group as describeConsumerGroups shows it: state, group epoch, and per member id its epoch and partitions. */
    static String snapshot(ConsumerGroupDescription d) {
        Map<String, String> members = new TreeMap<>();
        for (MemberDescription m : d.members()) {
            TreeSet<String> tps = new TreeSet<>();
            for (TopicPartition tp : m.assignment().topicPartitions()) tps.add(tp.toString());
            members.put(m.consumerId(), "epoch " + m.memberEpoch().orElse(-1) + " " + tps);
        }
        return d.groupState() + " epoch " + d.groupEpoch().orElse(-1) + " " + members;
    }

    static boolean stable(ConsumerGroupDescription d) {
        if (d.groupState() != GroupState.STABLE || d.members().size() != Scenarios.K44.RESTART_MEMBERS) return false;
        for (MemberDescription m : d.members())
            if (!m.memberEpoch().equals(d.groupEpoch()) || m.assignment().topicPartitions().size() != 1) return false;
        return true;
    }

    /**
     * group_consumer_restart: Scenarios.K44.RESTART_MEMBERS group.protocol=consumer members share the topic's partitions;
     * once they consumed the first records and committed, the orchestrator restarts the group's coordinator (--arg
     * restart). The members must keep their ids, epochs and partitions (describeConsumerGroups before and after, and no
     * rebalance callback across the restart), the commits must survive, and every record produced before and after must
     * reach the group exactly once.
     */
    static String groupConsumerRestart(Runner r) throws Exception {
        String g = Scenarios.group(r.topic, r.args);
        int parts = Scenarios.partitions("group_consumer_restart");
        long deadline = r.deadline;
        Map<String, Integer> seen = new HashMap<>();
        List<KafkaConsumer<byte[], byte[]>> members = new ArrayList<>();
        // Every change of a member's partitions, which a restart the group survives makes none of.
        List<String> changes = new ArrayList<>();
        ConsumerRebalanceListener listener = new ConsumerRebalanceListener() {
            @Override public void onPartitionsAssigned(Collection<TopicPartition> tps) { if (!tps.isEmpty()) changes.add("assigned " + tps); }
            @Override public void onPartitionsRevoked(Collection<TopicPartition> tps) { if (!tps.isEmpty()) changes.add("revoked " + tps); }
            @Override public void onPartitionsLost(Collection<TopicPartition> tps) { if (!tps.isEmpty()) changes.add("lost " + tps); }
        };
        String step = "create the topic";
        try (Admin admin = r.admin()) {
            // Right after another run's restart a cluster may take longer than ensureTopic's 20 s: try again.
            for (long until = System.currentTimeMillis() + 60_000; ; ) {
                try {
                    r.ensureTopic(admin, r.topic, parts);
                    break;
                } catch (java.util.concurrent.TimeoutException e) {
                    if (System.currentTimeMillis() > until) throw e;
                }
            }
            step = "set the group's session timeout";
            // A session that outlives a loaded machine's Kafka restart.
            Kafka44.setGroupConfig(r, admin, g, "consumer.session.timeout.ms", Scenarios.K44.RESTART_SESSION_TIMEOUT_MS);
            for (int i = 0; i < Scenarios.K44.RESTART_MEMBERS; i++) {
                KafkaConsumer<byte[], byte[]> c = r.consumer(Map.of(ConsumerConfig.GROUP_ID_CONFIG, g, ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer"));
                c.subscribe(List.of(r.topic), listener);
                members.add(c);
            }
            // The records come once the members share the partitions: a member joining later takes over a partition
            // from its committed offset.
            if (await(r, admin, g, members, seen, 0, Math.min(deadline, System.currentTimeMillis() + 30_000)) == null)
                throw Runner.fail("the group never was stable with " + Scenarios.K44.RESTART_MEMBERS + " members");
            step = "produce before the restart";
            produce(r, "before", parts, Scenarios.K44.RESTART_BEFORE);
            ConsumerGroupDescription before = await(r, admin, g, members, seen, parts * Scenarios.K44.RESTART_BEFORE, Math.min(deadline, System.currentTimeMillis() + 30_000));
            if (before == null) throw Runner.fail("before the restart: the group never was stable with " + Scenarios.K44.RESTART_MEMBERS + " members and all "
                    + parts * Scenarios.K44.RESTART_BEFORE + " records consumed (" + seen.size() + ")");
            step = "commit before the restart";
            for (KafkaConsumer<byte[], byte[]> c : members) c.commitSync(Duration.ofSeconds(15));
            int node = before.coordinator().id();
            int changed = changes.size();
            step = "restart node " + node;
            String restarted = restart(r, node);
            step = "produce after the restart";
            produce(r, "after", parts, Scenarios.K44.RESTART_AFTER);
            int total = parts * (Scenarios.K44.RESTART_BEFORE + Scenarios.K44.RESTART_AFTER);
            ConsumerGroupDescription after = await(r, admin, g, members, seen, total, deadline - 10_000);
            r.data.put("before", snapshot(before));
            r.data.put("coordinator", node);
            r.data.put("restart", restarted);
            if (after == null) throw Runner.fail("after restarting node " + node + ": the group never was stable again with all " + total + " records consumed (" + seen.size() + ")");
            r.data.put("after", snapshot(after));
            if (!snapshot(after).equals(snapshot(before))) throw Runner.fail("describeConsumerGroups before restarting node " + node + ": " + snapshot(before) + ", after: " + snapshot(after));
            if (changes.size() != changed) throw Runner.fail("the members' partitions changed across restarting node " + node + ": " + changes.subList(changed, changes.size()));
            for (Map.Entry<String, Integer> e : seen.entrySet()) if (e.getValue() != 1) throw Runner.fail("record " + e.getKey() + " reached the group " + e.getValue() + " times");
            step = "fetch the group's offsets after the restart";
            Map<TopicPartition, OffsetAndMetadata> offs = admin.listConsumerGroupOffsets(g).partitionsToOffsetAndMetadata().get(20, TimeUnit.SECONDS);
            for (int p = 0; p < parts; p++) {
                OffsetAndMetadata o = offs.get(new TopicPartition(r.topic, p));
                if (o == null || o.offset() < Scenarios.K44.RESTART_BEFORE) throw Runner.fail("partition " + p + ": committed " + o + " after the restart, want at least " + Scenarios.K44.RESTART_BEFORE);
            }
            return "restarted coordinator node " + node + ": " + snapshot(after) + " kept, commits kept, " + total + " records each consumed once";
        } catch (java.util.concurrent.TimeoutException | java.util.concurrent.ExecutionException | org.apache.kafka.common.KafkaException e) {
            throw Runner.fail(step + ": " + Runner.describe(e));
        } finally {
            for (KafkaConsumer<byte[], byte[]> c : members) c.close(Duration.ofSeconds(5));
        }
    }

    static void produce(Runner r, String round, int parts, int n) throws Exception {
        try (KafkaProducer<byte[], byte[]> p = r.producer(Map.of(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 60_000, ProducerConfig.MAX_BLOCK_MS_CONFIG, 60_000))) {
            List<java.util.concurrent.Future<?>> fs = new ArrayList<>();
            for (int part = 0; part < parts; part++)
                for (int i = 0; i < n; i++) fs.add(p.send(new ProducerRecord<>(r.topic, part, null, Runner.b(round + "-p" + part + "-" + i))));
            p.flush();
            for (var f : fs) f.get(60, TimeUnit.SECONDS);
        }
    }

    /** Polls every member until want records reached the group and it is stable; its description then, or null at until. */
    static ConsumerGroupDescription await(Runner r, Admin admin, String g, List<KafkaConsumer<byte[], byte[]>> members, Map<String, Integer> seen,
            int want, long until) {
        while (System.currentTimeMillis() < until) {
            for (KafkaConsumer<byte[], byte[]> c : members)
                for (ConsumerRecord<byte[], byte[]> rec : c.poll(Duration.ofMillis(100))) seen.merge(Runner.s(rec.value()), 1, Integer::sum);
            if (seen.size() < want) continue;
            try {
                ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(g)).describedGroups().get(g).get(10, TimeUnit.SECONDS);
                if (stable(d)) return d;
            } catch (Exception e) {
                // The coordinator is moving or loading the group: ask again.
            }
        }
        return null;
    }

    /** Asks the orchestrator to restart node (--arg restart, see cmd/compat/restart.go); its answer once the node serves again. */
    static String restart(Runner r, int node) throws Exception {
        String url = r.args.get("restart");
        if (url == null) throw Runner.fail("no --arg restart: the orchestrator runs this scenario");
        HttpResponse<String> resp = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(url + "&node=" + node))
                .timeout(Duration.ofSeconds(250)).POST(HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.ofString());
        if (resp.statusCode() != 200) throw Runner.fail("restart node " + node + ": " + resp.statusCode() + " " + resp.body().strip());
        return resp.body().strip();
    }
}
