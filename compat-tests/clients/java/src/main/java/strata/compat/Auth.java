package strata.compat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;

/**
 * The secure columns' scenarios (auth_*) and the security arguments (clients/RUNNERS.md) as client properties:
 * security.protocol, sasl.mechanism with a PlainLoginModule or ScramLoginModule sasl.jaas.config, the CA as a PEM
 * trust store, the client certificate and key inline as a PEM key store.
 */
final class Auth {
    private Auth() {}

    static Map<String, Object> properties(Map<String, String> args) {
        Map<String, Object> p = new HashMap<>();
        String protocol = args.getOrDefault("security.protocol", "PLAINTEXT").toUpperCase();
        p.put("security.protocol", protocol);
        boolean tls = protocol.equals("SSL") || protocol.equals("SASL_SSL");
        if (protocol.startsWith("SASL_")) {
            String mechanism = args.getOrDefault("sasl.mechanism", "").toUpperCase();
            String module = mechanism.startsWith("SCRAM-") ? "org.apache.kafka.common.security.scram.ScramLoginModule"
                    : "org.apache.kafka.common.security.plain.PlainLoginModule";
            p.put("sasl.mechanism", mechanism);
            p.put("sasl.jaas.config", module + " required username=\"" + args.getOrDefault("sasl.username", "")
                    + "\" password=\"" + args.getOrDefault("sasl.password", "") + "\";");
        }
        if (tls && args.containsKey("ssl.ca.location")) {
            p.put("ssl.truststore.type", "PEM");
            p.put("ssl.truststore.location", args.get("ssl.ca.location"));
        }
        if (tls && args.containsKey("ssl.certificate.location")) {
            try {
                p.put("ssl.keystore.type", "PEM");
                p.put("ssl.keystore.certificate.chain", Files.readString(Path.of(args.get("ssl.certificate.location"))));
                p.put("ssl.keystore.key", Files.readString(Path.of(args.get("ssl.key.location"))));
            } catch (IOException e) {
                throw new UncheckedIOException("client certificate", e);
            }
        }
        return p;
    }

    static String how(Runner r) {
        Map<String, String> a = r.args;
        String protocol = a.getOrDefault("security.protocol", "PLAINTEXT");
        if (protocol.startsWith("SASL_")) return a.get("sasl.mechanism") + " over " + protocol + " as " + a.get("sasl.username");
        return a.containsKey("ssl.certificate.location") ? protocol + " with a client certificate" : protocol;
    }

    /**
     * auth_plain, auth_scram_sha_256/512, auth_mtls, acl_allowed: produce the auth records and consume them back, from
     * partition 0 or (acl_allowed) in the scenario's group.
     */
    static String authenticated(Runner r, boolean inGroup) throws Exception {
        List<String> want = new ArrayList<>();
        try (KafkaProducer<byte[], byte[]> p = r.producer(Map.of())) {
            List<Future<RecordMetadata>> fs = new ArrayList<>();
            for (int i = 0; i < Scenarios.AUTH_RECORDS; i++) {
                want.add(Scenarios.AUTH_KEY_PREFIX + i + "=" + Scenarios.AUTH_VALUE_PREFIX + i);
                fs.add(p.send(new ProducerRecord<>(r.topic, 0, Runner.b(Scenarios.AUTH_KEY_PREFIX + i), Runner.b(Scenarios.AUTH_VALUE_PREFIX + i))));
            }
            p.flush();
            for (Future<RecordMetadata> f : fs) f.get(20, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw Runner.fail(how(r) + ": produce: " + Runner.describe(e));
        }
        List<ConsumerRecord<byte[], byte[]>> got;
        try (KafkaConsumer<byte[], byte[]> c = r.consumer(inGroup ? Map.of(ConsumerConfig.GROUP_ID_CONFIG, Scenarios.group(r.topic, r.args)) : Map.of())) {
            got = inGroup ? groupRead(c, r.topic, Scenarios.AUTH_RECORDS, 20_000)
                    : r.readAll(c, Runner.partitions(r.topic, 1), Scenarios.AUTH_RECORDS, 20_000);
        } catch (Exception e) {
            throw Runner.fail(how(r) + ": consume: " + Runner.describe(e));
        }
        List<String> seen = new ArrayList<>();
        for (ConsumerRecord<byte[], byte[]> rec : got) seen.add(Runner.s(rec.key()) + "=" + Runner.s(rec.value()));
        if (!seen.equals(want)) throw Runner.fail(how(r) + ": consumed " + seen + ", want " + want);
        return how(r) + ": produced and consumed " + got.size() + " records";
    }

    /** Subscribes c (in a group) to topic and polls until want records or timeoutMs. */
    static List<ConsumerRecord<byte[], byte[]>> groupRead(KafkaConsumer<byte[], byte[]> c, String topic, int want, long timeoutMs) {
        c.subscribe(List.of(topic));
        List<ConsumerRecord<byte[], byte[]>> out = new ArrayList<>();
        long until = System.currentTimeMillis() + timeoutMs;
        while (out.size() < want && System.currentTimeMillis() < until) {
            for (ConsumerRecord<byte[], byte[]> rec : c.poll(Duration.ofMillis(200))) out.add(rec);
        }
        return out;
    }

    /**
     * auth_bad_password, auth_no_tls, acl_denied, acl_deny_wins: one produce, which must fail within the refusal bound
     * (acl_denied and acl_deny_wins: with an authorization error).
     */
    static String refused(Runner r, String scenario) {
        long bound = Scenarios.AUTH_REFUSAL_BOUND_MS - 5_000;
        String err = null;
        try (KafkaProducer<byte[], byte[]> p = r.producer(Map.of(ProducerConfig.MAX_BLOCK_MS_CONFIG, bound))) {
            p.send(new ProducerRecord<>(r.topic, 0, null, Runner.b("refused"))).get(bound, TimeUnit.MILLISECONDS);
        } catch (Exception e) {
            err = Runner.describe(e);
        }
        if (err == null) throw Runner.fail("the client was served");
        r.data.put("error", err);
        if (scenario.equals("auth_bad_password") && !err.toLowerCase().contains("authentication"))
            throw Runner.fail("failed, but not with an authentication error: " + err);
        if ((scenario.equals("acl_denied") || scenario.equals("acl_deny_wins")) && !err.toLowerCase().contains("authoriz"))
            throw Runner.fail("failed, but not with an authorization error: " + err);
        return "refused: " + err;
    }

    /**
     * acl_group_denied: a consumer in the scenario's group polls until poll throws, which must happen within the refusal
     * bound with a group authorization error (the topic's name, which holds "group", taken out before looking).
     */
    static String groupRefused(Runner r) {
        String err = null;
        long end = System.currentTimeMillis() + Scenarios.AUTH_REFUSAL_BOUND_MS;
        try (KafkaConsumer<byte[], byte[]> c = r.consumer(Map.of(ConsumerConfig.GROUP_ID_CONFIG, Scenarios.group(r.topic, r.args)))) {
            c.subscribe(List.of(r.topic));
            while (System.currentTimeMillis() < end) c.poll(Duration.ofMillis(200));
        } catch (Exception e) {
            err = Runner.describe(e);
        }
        if (err == null) throw Runner.fail("hung: no error within " + Scenarios.AUTH_REFUSAL_BOUND_MS + " ms");
        r.data.put("error", err);
        String l = err.replace(r.topic, "TOPIC").toLowerCase();
        if (!l.contains("authoriz") || !l.contains("group"))
            throw Runner.fail("failed, but not with a group authorization error: " + err);
        return "refused: " + err;
    }
}
