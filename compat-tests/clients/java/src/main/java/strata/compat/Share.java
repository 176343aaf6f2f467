package strata.compat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.function.Predicate;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * The share group scenarios (KIP-932, compat-tests/README.md) through KafkaShareConsumer: share_consume, share_release,
 * share_reject, share_delivery_limit, share_lock_expiry, share_read_committed. A member in explicit acknowledgement mode
 * acknowledges every record it polls; commitSync sends the acknowledgements and returns the broker's answer to each.
 */
final class Share {
    private Share() {}

    /**
     * One record as a member got it: its value, delivery count, when poll returned it, and its acquisition lock's end
     * reckoned from then (later than the broker's by the fetch's time in the client).
     */
    record Delivery(String value, int count, long at, long lockEnd) {
        @Override public String toString() { return value + "#" + count; }
    }

    static String run(Runner r, String scenario) throws Exception {
        switch (scenario) {
            case "share_consume": return consume(r);
            case "share_release": return release(r);
            case "share_reject": return reject(r);
            case "share_delivery_limit": return deliveryLimit(r);
            case "share_lock_expiry": return lockExpiry(r);
            case "share_read_committed": return readCommitted(r);
            default: throw new IllegalArgumentException(scenario);
        }
    }

    static KafkaShareConsumer<byte[], byte[]> member(Runner r, String g, boolean explicit) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, r.bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, g);
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, "compat-java-share");
        p.put(ConsumerConfig.SHARE_ACKNOWLEDGEMENT_MODE_CONFIG, explicit ? "explicit" : "implicit");
        p.putAll(r.security);
        KafkaShareConsumer<byte[], byte[]> c = new KafkaShareConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer());
        c.subscribe(List.of(r.topic));
        return c;
    }

    /** Polls once (up to ms), acknowledging each record with ack (explicit mode) when ack is not null. */
    static List<Delivery> poll(KafkaShareConsumer<byte[], byte[]> c, long ms, Function<Delivery, AcknowledgeType> ack) {
        List<Delivery> out = new ArrayList<>();
        for (ConsumerRecord<byte[], byte[]> rec : c.poll(Duration.ofMillis(ms))) {
            long now = System.currentTimeMillis();
            Delivery d = new Delivery(Runner.s(rec.value()), rec.deliveryCount().map(Short::intValue).orElse(-1), now,
                    now + c.acquisitionLockTimeoutMs().orElse(0));
            if (ack != null) c.acknowledge(rec, ack.apply(d));
            out.add(d);
        }
        return out;
    }

    /** Polls until done(every delivery so far), within ms, acknowledging as poll does. */
    static List<Delivery> receive(Runner r, KafkaShareConsumer<byte[], byte[]> c, long ms, Function<Delivery, AcknowledgeType> ack,
            Predicate<List<Delivery>> done) {
        long until = Math.min(r.deadline, System.currentTimeMillis() + ms);
        List<Delivery> all = new ArrayList<>();
        while (!done.test(all)) {
            if (System.currentTimeMillis() > until) throw Runner.fail("not done within " + ms + " ms after " + all.size() + " deliveries " + all);
            all.addAll(poll(c, 500, ack));
        }
        return all;
    }

    /** commitSync: sends the acknowledgements (implicit mode: of the last poll's records) and fails on any error answered. */
    static void flush(KafkaShareConsumer<byte[], byte[]> c) {
        for (Map.Entry<TopicIdPartition, Optional<KafkaException>> e : c.commitSync(Duration.ofSeconds(15)).entrySet()) {
            if (e.getValue().isPresent()) throw Runner.fail("commitSync: " + e.getKey() + ": " + Runner.describe(e.getValue().get()));
        }
    }

    static List<Integer> countsOf(List<Delivery> ds, String value) {
        List<Integer> out = new ArrayList<>();
        for (Delivery d : ds) if (d.value().equals(value)) out.add(d.count());
        return out;
    }

    static boolean hasAll(List<Delivery> ds) {
        for (int i = 0; i < Scenarios.Shares.RECORDS; i++) if (countsOf(ds, Scenarios.shareValue(i)).isEmpty()) return false;
        return true;
    }

    static Predicate<List<Delivery>> hasValue(String v) { return ds -> !countsOf(ds, v).isEmpty(); }

    /** Every value but skip was delivered exactly once, with delivery count 1. */
    static void onceEach(List<Delivery> ds, String skip) {
        for (int i = 0; i < Scenarios.Shares.RECORDS; i++) {
            String v = Scenarios.shareValue(i);
            List<Integer> c = countsOf(ds, v);
            if (!v.equals(skip) && !c.equals(List.of(1))) throw Runner.fail(v + " delivered with counts " + c + ", want once with count 1 (deliveries " + ds + ")");
        }
    }

    /** Creates the 1-partition topic and sets share.auto.offset.reset and the configs of extra on every group. */
    static void setup(Runner r, List<String> groups, Map<String, String> extra) throws Exception {
        try (Admin admin = r.admin()) {
            r.ensureTopic(admin, r.topic, 1);
            for (String g : groups) {
                Map<String, String> cs = new HashMap<>(extra);
                cs.put("share.auto.offset.reset", Scenarios.Shares.AUTO_OFFSET_RESET);
                for (Map.Entry<String, String> e : cs.entrySet()) Kafka44.setGroupConfig(r, admin, g, e.getKey(), e.getValue());
            }
        }
    }

    /** setup, then the Scenarios.Shares.RECORDS records. */
    static void records(Runner r, List<String> groups, Map<String, String> extra) throws Exception {
        setup(r, groups, extra);
        List<String> vs = new ArrayList<>();
        for (int i = 0; i < Scenarios.Shares.RECORDS; i++) vs.add(Scenarios.shareValue(i));
        produce(r, vs);
    }

    static void produce(Runner r, List<String> values) throws Exception {
        try (KafkaProducer<byte[], byte[]> p = r.producer(Map.of())) {
            List<java.util.concurrent.Future<?>> fs = new ArrayList<>();
            for (String v : values) fs.add(p.send(new ProducerRecord<>(r.topic, 0, null, Runner.b(v))));
            p.flush();
            for (var f : fs) f.get(20, TimeUnit.SECONDS);
        }
    }

    static AcknowledgeType accept(Delivery d) { return AcknowledgeType.ACCEPT; }

    /**
     * share_consume: one group acknowledges every record explicitly (ACCEPT), another implicitly; after the sentinel a
     * new member of each group gets the sentinel only, as every record was accepted.
     */
    static String consume(Runner r) throws Exception {
        String g = Scenarios.group(r.topic, r.args);
        List<String> groups = List.of(g + "-explicit", g + "-implicit");
        records(r, groups, Map.of());
        for (String mg : groups) {
            boolean explicit = mg.endsWith("-explicit");
            try (KafkaShareConsumer<byte[], byte[]> c = member(r, mg, explicit)) {
                onceEach(receive(r, c, 20_000, explicit ? Share::accept : null, Share::hasAll), "");
                flush(c);
            }
        }
        produce(r, List.of(Scenarios.Shares.SENTINEL));
        for (String mg : groups) {
            try (KafkaShareConsumer<byte[], byte[]> c = member(r, mg, true)) {
                List<Delivery> ds = receive(r, c, 20_000, Share::accept, hasValue(Scenarios.Shares.SENTINEL));
                if (ds.size() != 1) throw Runner.fail(mg + ": a new member got " + ds + ", want only " + Scenarios.Shares.SENTINEL + ": acknowledged records delivered again");
                flush(c);
            }
        }
        return Scenarios.Shares.RECORDS + " records accepted explicitly and implicitly, each delivered once";
    }

    /** share_release: the poison record, released at its first delivery, is delivered again with delivery count 2. */
    static String release(Runner r) throws Exception {
        String g = Scenarios.group(r.topic, r.args), poison = Scenarios.shareValue(Scenarios.Shares.POISON);
        records(r, List.of(g), Map.of());
        try (KafkaShareConsumer<byte[], byte[]> c = member(r, g, true)) {
            List<Delivery> ds = receive(r, c, 30_000, d -> d.value().equals(poison) && d.count() == 1 ? AcknowledgeType.RELEASE : AcknowledgeType.ACCEPT,
                    all -> hasAll(all) && countsOf(all, poison).size() >= 2);
            onceEach(ds, poison);
            if (!countsOf(ds, poison).equals(List.of(1, 2))) throw Runner.fail("released " + poison + " delivered with counts " + countsOf(ds, poison) + ", want [1, 2]");
            flush(c);
        }
        return "released " + poison + " delivered again with delivery count 2";
    }

    /** share_reject: the poison record, rejected at its first delivery, is not delivered again before the sentinel. */
    static String reject(Runner r) throws Exception {
        String g = Scenarios.group(r.topic, r.args), poison = Scenarios.shareValue(Scenarios.Shares.POISON);
        records(r, List.of(g), Map.of());
        Function<Delivery, AcknowledgeType> ack = d -> d.value().equals(poison) ? AcknowledgeType.REJECT : AcknowledgeType.ACCEPT;
        List<Delivery> ds;
        try (KafkaShareConsumer<byte[], byte[]> c = member(r, g, true)) {
            ds = receive(r, c, 20_000, ack, Share::hasAll);
            flush(c);
            produce(r, List.of(Scenarios.Shares.SENTINEL));
            ds.addAll(receive(r, c, 20_000, ack, hasValue(Scenarios.Shares.SENTINEL)));
            onceEach(ds, "");
            flush(c);
        }
        return "rejected " + poison + " not delivered again (" + ds.size() + " deliveries up to the sentinel)";
    }

    /**
     * share_delivery_limit: with share.delivery.count.limit set on the group, the poison record released at every delivery
     * is delivered that many times, then archived: not delivered before the sentinel.
     */
    static String deliveryLimit(Runner r) throws Exception {
        String g = Scenarios.group(r.topic, r.args), poison = Scenarios.shareValue(Scenarios.Shares.POISON);
        int limit = Integer.parseInt(Scenarios.Shares.DELIVERY_LIMIT);
        records(r, List.of(g), Map.of("share.delivery.count.limit", Scenarios.Shares.DELIVERY_LIMIT));
        Function<Delivery, AcknowledgeType> ack = d -> d.value().equals(poison) ? AcknowledgeType.RELEASE : AcknowledgeType.ACCEPT;
        List<Delivery> ds;
        try (KafkaShareConsumer<byte[], byte[]> c = member(r, g, true)) {
            ds = receive(r, c, 30_000, ack, all -> hasAll(all) && countsOf(all, poison).size() >= limit);
            flush(c);
            produce(r, List.of(Scenarios.Shares.SENTINEL));
            ds.addAll(receive(r, c, 20_000, ack, hasValue(Scenarios.Shares.SENTINEL)));
            flush(c);
        }
        onceEach(ds, poison);
        List<Integer> want = new ArrayList<>();
        for (int i = 1; i <= limit; i++) want.add(i);
        if (!countsOf(ds, poison).equals(want))
            throw Runner.fail(poison + " released at every delivery was delivered with counts " + countsOf(ds, poison) + ", want " + want + " (share.delivery.count.limit " + limit + ")");
        return poison + " delivered " + limit + " times (share.delivery.count.limit), then archived";
    }

    /**
     * share_lock_expiry: with share.record.lock.duration.ms set on the group, the records a member polled and then
     * stopped on (no poll, no acknowledgement) go to a second member with delivery count 2, not before their
     * acquisition lock ended nor 10 s after the group's lock duration.
     */
    static String lockExpiry(Runner r) throws Exception {
        String g = Scenarios.group(r.topic, r.args);
        records(r, List.of(g), Map.of("share.record.lock.duration.ms", Scenarios.Shares.LOCK_DURATION_MS));
        KafkaShareConsumer<byte[], byte[]> first = member(r, g, true);
        try {
            List<Delivery> held = new ArrayList<>();
            long until = System.currentTimeMillis() + 20_000;
            while (held.isEmpty() && System.currentTimeMillis() < until) held = poll(first, 500, null);
            if (held.isEmpty()) throw Runner.fail("the first member got no record");
            List<Delivery> ds;
            try (KafkaShareConsumer<byte[], byte[]> second = member(r, g, true)) {
                ds = receive(r, second, 40_000, Share::accept, Share::hasAll);
                flush(second);
            }
            for (Delivery h : held) {
                for (Delivery d : ds) {
                    if (!d.value().equals(h.value())) continue;
                    if (d.count() != 2) throw Runner.fail(d.value() + ", held by the stopped member, reached the second with delivery count " + d.count() + ", want 2 (deliveries " + ds + ")");
                    if (h.lockEnd() - d.at() > 2_000) throw Runner.fail(d.value() + " reached the second member " + (h.lockEnd() - d.at()) + " ms before the first member's acquisition lock ended");
                    long late = d.at() - h.at() - Long.parseLong(Scenarios.Shares.LOCK_DURATION_MS);
                    if (late > 10_000) throw Runner.fail(d.value() + " reached the second member " + late + " ms after the group's share.record.lock.duration.ms from its first delivery");
                }
            }
            return held.size() + " records held by a stopped member delivered to another with delivery count 2, "
                    + (ds.get(ds.size() - 1).at() - held.get(0).at()) / 1000 + " s after the first delivery";
        } finally {
            first.close(Duration.ZERO);
        }
    }

    /**
     * share_read_committed: with share.isolation.level=read_committed on the group, a member gets the committed
     * transactions' records and none of the aborted one's.
     */
    static String readCommitted(Runner r) throws Exception {
        String g = Scenarios.group(r.topic, r.args);
        setup(r, List.of(g), Map.of("share.isolation.level", "read_committed"));
        List<String> committed = new ArrayList<>();
        try (KafkaProducer<byte[], byte[]> p = r.producer(Map.of(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "compat-java-share-" + r.topic,
                ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true))) {
            p.initTransactions();
            for (int t = 0; t < Scenarios.K44.TXN_V2_ENDS.size(); t++) {
                boolean commit = Scenarios.K44.TXN_V2_ENDS.get(t).equals("commit");
                p.beginTransaction();
                for (int i = 0; i < Scenarios.Shares.TXN_RECORDS; i++) {
                    String v = Scenarios.shareTxnValue(t, i);
                    p.send(new ProducerRecord<>(r.topic, 0, null, Runner.b(v)));
                    if (commit) committed.add(v);
                }
                if (commit) {
                    p.commitTransaction();
                } else {
                    p.flush();
                    p.abortTransaction();
                }
            }
        }
        List<String> got = new ArrayList<>();
        try (KafkaShareConsumer<byte[], byte[]> c = member(r, g, true)) {
            for (Delivery d : receive(r, c, 20_000, Share::accept, hasValue(committed.get(committed.size() - 1)))) got.add(d.value());
            flush(c);
        }
        if (!got.equals(committed)) throw Runner.fail("read_committed share member got " + got + ", want the committed " + committed);
        return committed.size() + " committed records, none of the aborted transaction's";
    }
}
