package strata.compat;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.DeletedRecords;
import org.apache.kafka.clients.admin.LogDirDescription;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.ReplicaInfo;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.ApiException;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Strata compat-tests runner for the Java client (kafka-clients).
 *
 * Protocol: --bootstrap HOST:PORT --scenario NAME --topic TOPIC [--replication-factor N] [--arg K=V ...]; prints exactly one JSON
 * object {"result":"pass"|"fail"|"skip","detail":"...","data":{...}} as its last stdout line, exit 0.
 */
public final class Runner {
    static final String CLIENT = "kafka-java";
    static final long SCENARIO_BUDGET_MS = 45_000;

    /** Scenario outcome; thrown to finish early with fail or skip. */
    static final class Outcome extends RuntimeException {
        final String result;
        Outcome(String result, String detail) { super(detail, null, false, false); this.result = result; }
    }

    static Outcome fail(String detail) { return new Outcome("fail", detail); }

    final String bootstrap;
    final String topic;
    final Map<String, String> args;
    /** Replication factor of every topic the runner creates (--replication-factor, default 1). */
    final short rf;
    final Map<String, Object> data = new LinkedHashMap<>();
    long deadline = System.currentTimeMillis() + SCENARIO_BUDGET_MS; // Scenarios.budgetMs once main knows the scenario
    /** The security arguments as client properties (Auth.properties), in every client. */
    final Map<String, Object> security;

    Runner(String bootstrap, String topic, Map<String, String> args, short rf) {
        this.bootstrap = bootstrap;
        this.topic = topic;
        this.args = args;
        this.rf = rf;
        this.security = Auth.properties(args);
    }

    public static void main(String[] argv) {
        // Client logs go to stderr and only from WARN up; stdout carries the result line only.
        System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
        System.setProperty("org.slf4j.simpleLogger.logFile", "System.err");
        String bootstrap = null, scenario = null, topic = null;
        short rf = 1;
        Map<String, String> args = new LinkedHashMap<>();
        for (int i = 0; i < argv.length; i++) {
            String a = argv[i];
            String v = i + 1 < argv.length ? argv[i + 1] : null;
            switch (a) {
                case "--bootstrap": bootstrap = v; i++; break;
                case "--scenario": scenario = v; i++; break;
                case "--topic": topic = v; i++; break;
                case "--replication-factor": rf = Short.parseShort(v); i++; break;
                case "--arg": {
                    i++;
                    if (v != null && v.contains("=")) args.put(v.substring(0, v.indexOf('=')), v.substring(v.indexOf('=') + 1));
                    break;
                }
                default: break;
            }
        }
        String result;
        String detail;
        Runner r = new Runner(bootstrap, topic, args, rf);
        if (scenario != null) r.deadline = System.currentTimeMillis() + Scenarios.budgetMs(scenario, SCENARIO_BUDGET_MS);
        if (bootstrap == null || scenario == null || topic == null) {
            result = "fail";
            detail = "usage: --bootstrap HOST:PORT --scenario NAME --topic TOPIC [--replication-factor N] [--arg K=V ...]";
        } else {
            try {
                detail = r.run(scenario);
                result = "pass";
            } catch (Outcome o) {
                result = o.result;
                detail = o.getMessage();
            } catch (Throwable t) {
                result = "fail";
                detail = describe(t);
            }
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("result", result);
        out.put("detail", detail == null ? "" : detail);
        out.put("data", r.data);
        System.out.flush();
        System.out.println(Json.encode(out));
        System.out.flush();
        // Lingering client threads must not keep the JVM alive.
        Runtime.getRuntime().halt(0);
    }

    String run(String scenario) throws Exception {
        switch (scenario) {
            case "metadata": return metadata();
            case "create_topic": return createTopic();
            case "produce_consume_none": return produceConsume("none");
            case "produce_consume_gzip": return produceConsume("gzip");
            case "produce_consume_snappy": return produceConsume("snappy");
            case "produce_consume_lz4": return produceConsume("lz4");
            case "produce_consume_zstd": return produceConsume("zstd");
            case "headers": return headers();
            case "list_offsets": return listOffsets();
            case "idempotent_produce": return idempotentProduce();
            case "group_commit_resume": return groupCommitResume();
            case "transactions": return transactions();
            case "describe_list_groups": return describeListGroups();
            case "describe_configs": return describeConfigs();
            case "create_partitions": return createPartitions();
            case "delete_topic": return deleteTopic();
            case "max_message_size": return maxMessageSize();
            case "alter_configs": return alterConfigs();
            case "describe_topic": return describeTopic();
            case "log_dirs": return logDirs();
            case "delete_records": return deleteRecords();
            case "consumer_groups_cli": throw new Outcome("skip", "kafka-cli only: checks the kafka-consumer-groups tool's output");
            case "group_consumer_protocol": return groupConsumerProtocol();
            case "cross_produce": return crossProduce();
            case "cross_consume": return crossConsume();
            case "auth_plain", "auth_scram_sha_256", "auth_scram_sha_512", "auth_mtls": return Auth.authenticated(this, false);
            case "acl_allowed": return Auth.authenticated(this, true);
            case "auth_bad_password", "auth_no_tls", "acl_denied", "acl_deny_wins": return Auth.refused(this, scenario);
            case "acl_group_denied": return Auth.groupRefused(this);
            case "transactions_v2", "group_configs", "delegation_token", "fetch_sessions", "group_consumer_restart": return Kafka44.run(this, scenario);
            case "share_consume", "share_release", "share_reject", "share_delivery_limit", "share_lock_expiry", "share_read_committed": return Share.run(this, scenario);
            default: throw new Outcome("skip", "unknown scenario " + scenario);
        }
    }

    // ---------------------------------------------------------------- clients

    Admin admin() {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 15_000);
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 20_000);
        p.put(AdminClientConfig.CLIENT_ID_CONFIG, "compat-java-admin");
        p.putAll(security);
        return Admin.create(p);
    }

    KafkaProducer<byte[], byte[]> producer(Map<String, Object> extra) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.CLIENT_ID_CONFIG, "compat-java-producer");
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 20_000);
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 15_000);
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 30_000);
        p.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        p.putAll(security);
        p.putAll(extra);
        return new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
    }

    KafkaConsumer<byte[], byte[]> consumer(Map<String, Object> extra) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, "compat-java-consumer");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        p.put(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, 15_000);
        p.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 20_000);
        p.putAll(security);
        p.putAll(extra);
        return new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }

    /** Creates the topic (an existing one is fine) and waits until metadata shows all its partitions. */
    void ensureTopic(Admin admin, String name, int partitions) throws Exception {
        try {
            admin.createTopics(List.of(new NewTopic(name, partitions, rf))).all().get(20, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            if (!(e.getCause() instanceof TopicExistsException)) throw fail("create topic " + name + ": " + describe(e.getCause()));
        }
        waitPartitions(admin, name, partitions);
    }

    /** Waits (20 s, 60 s for more than 50 partitions, as rt.WaitReady) until describeTopics shows `partitions` partitions, each led by a broker describeCluster lists that answers ListOffsets for it. */
    int waitPartitions(Admin admin, String name, int partitions) throws Exception {
        return Ready.waitReady(name, partitions, Math.min(deadline, System.currentTimeMillis() + (partitions > 50 ? 60_000 : 20_000)), () -> {
            Set<Integer> brokers = new HashSet<>();
            for (Node n : admin.describeCluster().nodes().get(10, TimeUnit.SECONDS)) brokers.add(n.id());
            TopicDescription d = admin.describeTopics(List.of(name)).allTopicNames().get(10, TimeUnit.SECONDS).get(name);
            int[] leaders = new int[d.partitions().size()];
            Arrays.fill(leaders, -1);
            for (TopicPartitionInfo p : d.partitions()) {
                if (p.partition() < leaders.length && p.leader() != null && !p.leader().isEmpty()) leaders[p.partition()] = p.leader().id();
            }
            return new Ready.TopicMeta(brokers, leaders);
        }, () -> {
            Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
            for (TopicPartition tp : partitions(name, partitions)) latest.put(tp, OffsetSpec.latest());
            admin.listOffsets(latest).all().get(10, TimeUnit.SECONDS);
        });
    }

    static List<TopicPartition> partitions(String topic, int n) {
        List<TopicPartition> l = new ArrayList<>();
        for (int i = 0; i < n; i++) l.add(new TopicPartition(topic, i));
        return l;
    }

    /** Reads from the beginning of the given partitions until `want` records or until the deadline. */
    List<ConsumerRecord<byte[], byte[]>> readAll(KafkaConsumer<byte[], byte[]> c, List<TopicPartition> tps, int want, long timeoutMs) {
        c.assign(tps);
        c.seekToBeginning(tps);
        List<ConsumerRecord<byte[], byte[]>> out = new ArrayList<>();
        long until = Math.min(deadline, System.currentTimeMillis() + timeoutMs);
        while (out.size() < want && System.currentTimeMillis() < until) {
            for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(500))) out.add(r);
        }
        return out;
    }

    static byte[] b(String s) { return s == null ? null : s.getBytes(StandardCharsets.UTF_8); }
    static String s(byte[] b) { return b == null ? null : new String(b, StandardCharsets.UTF_8); }

    // ---------------------------------------------------------------- scenarios

    String metadata() throws Exception {
        try (Admin admin = admin()) {
            ensureTopic(admin, topic, 3);
            Collection<Node> nodes = admin.describeCluster().nodes().get(20, TimeUnit.SECONDS);
            List<Object> brokers = new ArrayList<>();
            for (Node n : nodes) brokers.add(Map.of("id", n.id(), "host", n.host(), "port", n.port()));
            data.put("brokers", brokers);
            if (nodes.isEmpty()) throw fail("no brokers in metadata");
            for (Node n : nodes) if (n.host() == null || n.host().isEmpty() || n.port() <= 0) throw fail("broker without host/port: " + n);
            Set<String> names = admin.listTopics().names().get(20, TimeUnit.SECONDS);
            data.put("topic_listed", names.contains(topic));
            if (!names.contains(topic)) throw fail("topic " + topic + " not listed; topics: " + names);
            return nodes.size() + " broker(s), topic listed";
        }
    }

    String createTopic() throws Exception {
        try (Admin admin = admin()) {
            admin.createTopics(List.of(new NewTopic(topic, 3, rf))).all().get(20, TimeUnit.SECONDS);
            int n = waitPartitions(admin, topic, 3);
            data.put("partitions", n);
            return "created with " + n + " partitions";
        }
    }

    String produceConsume(String codec) throws Exception {
        try (Admin admin = admin()) {
            ensureTopic(admin, topic, 3);
        }
        List<String> sent = new ArrayList<>();
        try (KafkaProducer<byte[], byte[]> p = producer(Map.of(ProducerConfig.COMPRESSION_TYPE_CONFIG, codec))) {
            List<java.util.concurrent.Future<RecordMetadata>> fs = new ArrayList<>();
            for (Scenarios.Rec r : Scenarios.PRODUCE_SET) {
                fs.add(p.send(new ProducerRecord<>(topic, b(r.key()), b(r.value()))));
                sent.add(r.value());
            }
            p.flush();
            for (var f : fs) f.get(30, TimeUnit.SECONDS);
        }
        List<ConsumerRecord<byte[], byte[]>> got;
        try (KafkaConsumer<byte[], byte[]> c = consumer(Map.of())) {
            got = readAll(c, partitions(topic, 3), Scenarios.PRODUCE_SET.size(), 30_000);
        }
        data.put("consumed", got.size());
        if (got.size() != Scenarios.PRODUCE_SET.size()) throw fail("consumed " + got.size() + " records, want " + Scenarios.PRODUCE_SET.size());
        Map<String, String> keyOf = new HashMap<>();
        Map<String, Integer> indexOf = new HashMap<>();
        for (int i = 0; i < Scenarios.PRODUCE_SET.size(); i++) {
            keyOf.put(Scenarios.PRODUCE_SET.get(i).value(), Scenarios.PRODUCE_SET.get(i).key());
            indexOf.put(Scenarios.PRODUCE_SET.get(i).value(), i);
        }
        Set<String> values = new HashSet<>();
        Map<Integer, Long> lastOffset = new HashMap<>();
        Map<String, Integer> lastIndexByKey = new HashMap<>();
        for (ConsumerRecord<byte[], byte[]> r : got) {
            String v = s(r.value());
            String k = s(r.key());
            if (!values.add(v)) throw fail("duplicate value " + v);
            if (!indexOf.containsKey(v)) throw fail("unexpected value " + v);
            if (!java.util.Objects.equals(keyOf.get(v), k)) throw fail("record " + v + " has key " + k);
            if (k != null) {
                int i = indexOf.get(v);
                Integer prev = lastIndexByKey.put(k, i);
                if (prev != null && prev >= i) throw fail("key " + k + ": " + v + " after " + Scenarios.PRODUCE_SET.get(prev).value());
            }
            Long prevOff = lastOffset.put(r.partition(), r.offset());
            if (prevOff != null && prevOff >= r.offset()) throw fail("partition " + r.partition() + ": offset " + r.offset() + " after " + prevOff);
        }
        if (!values.equals(new HashSet<>(sent))) throw fail("values differ from produced set");
        data.put("partitions_used", lastOffset.size());
        return Scenarios.PRODUCE_SET.size() + " records (" + codec + ") consumed intact over " + lastOffset.size() + " partition(s)";
    }

    String headers() throws Exception {
        try (Admin admin = admin()) {
            ensureTopic(admin, topic, 1);
        }
        try (KafkaProducer<byte[], byte[]> p = producer(Map.of())) {
            for (int i = 0; i < Scenarios.HEADERS_RECORDS; i++) {
                p.send(new ProducerRecord<>(topic, 0, b(Scenarios.HEADERS_KEY_PREFIX + i), b(Scenarios.HEADERS_VALUE_PREFIX + i),
                        Scenarios.headers())).get(30, TimeUnit.SECONDS);
            }
        }
        List<ConsumerRecord<byte[], byte[]>> got;
        try (KafkaConsumer<byte[], byte[]> c = consumer(Map.of())) {
            got = readAll(c, partitions(topic, 1), Scenarios.HEADERS_RECORDS, 30_000);
        }
        if (got.size() != Scenarios.HEADERS_RECORDS) throw fail("consumed " + got.size() + " records, want " + Scenarios.HEADERS_RECORDS);
        for (ConsumerRecord<byte[], byte[]> r : got) {
            Header[] hs = r.headers().toArray();
            List<Header> want = Scenarios.headers();
            if (hs.length != want.size()) throw fail("offset " + r.offset() + ": " + hs.length + " headers, want " + want.size() + ": " + Arrays.toString(hs));
            for (int i = 0; i < hs.length; i++) {
                if (!hs[i].key().equals(want.get(i).key()) || !Arrays.equals(hs[i].value(), want.get(i).value()))
                    throw fail("offset " + r.offset() + " header " + i + ": got " + hs[i] + ", want " + want.get(i));
            }
        }
        return Scenarios.HEADERS_RECORDS + " records with " + Scenarios.headers().size() + " headers each (order, duplicates, binary value) intact";
    }

    String listOffsets() throws Exception {
        final long base = Scenarios.BASE_TS;
        try (Admin admin = admin()) {
            ensureTopic(admin, topic, 1);
            try (KafkaProducer<byte[], byte[]> p = producer(Map.of())) {
                for (int i = 0; i < Scenarios.LIST_OFFSETS_RECORDS; i++) {
                    p.send(new ProducerRecord<>(topic, 0, base + i * Scenarios.TS_STEP, b("k" + i), b("v" + i))).get(30, TimeUnit.SECONDS);
                }
            }
            TopicPartition tp = new TopicPartition(topic, 0);
            long earliest = offset(admin, tp, OffsetSpec.earliest());
            long latest = offset(admin, tp, OffsetSpec.latest());
            long byTs = offset(admin, tp, OffsetSpec.forTimestamp(base + 5000));
            long after = offset(admin, tp, OffsetSpec.forTimestamp(base + 60_000));
            data.put("earliest", earliest);
            data.put("latest", latest);
            data.put("by_timestamp", byTs);
            data.put("after_last", after);
            if (earliest != 0 || latest != 10 || byTs != 5 || after != -1)
                throw fail("earliest=" + earliest + " latest=" + latest + " byTimestamp=" + byTs + " afterLast=" + after + " (want 0, 10, 5, -1)");
            return "earliest 0, latest 10, by timestamp 5, after last -1";
        }
    }

    static long offset(Admin admin, TopicPartition tp, OffsetSpec spec) throws Exception {
        ListOffsetsResult r = admin.listOffsets(Map.of(tp, spec));
        return r.partitionResult(tp).get(20, TimeUnit.SECONDS).offset();
    }

    String idempotentProduce() throws Exception {
        try (Admin admin = admin()) {
            ensureTopic(admin, topic, 1);
        }
        try (KafkaProducer<byte[], byte[]> p = producer(Map.of(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true))) {
            List<java.util.concurrent.Future<RecordMetadata>> fs = new ArrayList<>();
            for (int i = 0; i < 100; i++) fs.add(p.send(new ProducerRecord<>(topic, b("k" + i), b("v" + i))));
            p.flush();
            for (var f : fs) f.get(30, TimeUnit.SECONDS);
        }
        List<ConsumerRecord<byte[], byte[]>> got;
        try (KafkaConsumer<byte[], byte[]> c = consumer(Map.of())) {
            got = readAll(c, partitions(topic, 1), 100, 30_000);
            // Linger a little to catch duplicates beyond the first 100.
            for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(500))) got.add(r);
        }
        Set<String> vals = new HashSet<>();
        for (ConsumerRecord<byte[], byte[]> r : got) vals.add(s(r.value()));
        data.put("consumed", got.size());
        data.put("distinct", vals.size());
        if (got.size() != 100 || vals.size() != 100) throw fail("consumed " + got.size() + " records, " + vals.size() + " distinct; want exactly 100");
        return "100 records exactly once";
    }

    String groupCommitResume() throws Exception {
        String group = Scenarios.group(topic, args);
        try (Admin admin = admin()) {
            ensureTopic(admin, topic, 1);
        }
        try (KafkaProducer<byte[], byte[]> p = producer(Map.of())) {
            for (int i = 0; i < 20; i++) p.send(new ProducerRecord<>(topic, 0, b("k" + i), b("v" + i)));
            p.flush();
        }
        TopicPartition tp = new TopicPartition(topic, 0);
        Map<String, Object> gc = Map.of(ConsumerConfig.GROUP_ID_CONFIG, group, ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 10);
        int consumed = 0;
        try (KafkaConsumer<byte[], byte[]> c = consumer(gc)) {
            c.subscribe(List.of(topic));
            long until = Math.min(deadline - 15_000, System.currentTimeMillis() + 25_000);
            while (consumed < 10 && System.currentTimeMillis() < until) {
                ConsumerRecords<byte[], byte[]> rs = c.poll(Duration.ofMillis(500));
                for (ConsumerRecord<byte[], byte[]> r : rs) if (consumed < 10) consumed++;
            }
            if (consumed < 10) throw fail("first consumer got " + consumed + " of 10 records");
            c.commitSync(Map.of(tp, new OffsetAndMetadata(10)), Duration.ofSeconds(15));
        }
        long first = -1;
        try (KafkaConsumer<byte[], byte[]> c = consumer(gc)) {
            c.subscribe(List.of(topic));
            long until = Math.min(deadline, System.currentTimeMillis() + 25_000);
            while (first < 0 && System.currentTimeMillis() < until) {
                ConsumerRecords<byte[], byte[]> rs = c.poll(Duration.ofMillis(500));
                for (ConsumerRecord<byte[], byte[]> r : rs) { first = r.offset(); break; }
            }
        }
        data.put("resumed_at", first);
        if (first != 10) throw fail("second consumer resumed at offset " + first + ", want 10");
        return "committed 10, resumed at 10";
    }

    String transactions() throws Exception {
        try (Admin admin = admin()) {
            ensureTopic(admin, topic, 1);
        }
        try (KafkaProducer<byte[], byte[]> p = producer(Map.of(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "compat-java-" + topic,
                ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true))) {
            p.initTransactions();
            p.beginTransaction();
            for (int i = 0; i < 5; i++) p.send(new ProducerRecord<>(topic, 0, b("k" + i), b("committed-" + i)));
            p.commitTransaction();
            p.beginTransaction();
            for (int i = 0; i < 5; i++) p.send(new ProducerRecord<>(topic, 0, b("k" + i), b("aborted-" + i)));
            p.flush();
            p.abortTransaction();
        }
        List<String> vals = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> c = consumer(Map.of(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed"))) {
            TopicPartition tp = new TopicPartition(topic, 0);
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            long end = c.endOffsets(List.of(tp)).get(tp);
            data.put("end_offset", end);
            long until = Math.min(deadline, System.currentTimeMillis() + 20_000);
            while (c.position(tp) < end && System.currentTimeMillis() < until) {
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(500))) vals.add(s(r.value()));
            }
            for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(300))) vals.add(s(r.value()));
        }
        data.put("values", vals);
        List<String> want = List.of("committed-0", "committed-1", "committed-2", "committed-3", "committed-4");
        if (!vals.equals(want)) throw fail("read_committed saw " + vals + ", want " + want);
        return "read_committed saw exactly the 5 committed records";
    }

    String describeListGroups() throws Exception {
        String group = Scenarios.group(topic, args);
        try (Admin admin = admin()) {
            ensureTopic(admin, topic, 1);
            try (KafkaProducer<byte[], byte[]> p = producer(Map.of())) {
                for (int i = 0; i < 5; i++) p.send(new ProducerRecord<>(topic, 0, b("k" + i), b("v" + i)));
                p.flush();
            }
            try (KafkaConsumer<byte[], byte[]> c = consumer(Map.of(ConsumerConfig.GROUP_ID_CONFIG, group))) {
                c.subscribe(List.of(topic));
                int n = 0;
                long until = Math.min(deadline - 15_000, System.currentTimeMillis() + 25_000);
                while (n < 5 && System.currentTimeMillis() < until) n += c.poll(Duration.ofMillis(500)).count();
                if (n < 5) throw fail("group consumer got " + n + " of 5 records");
                c.commitSync(Duration.ofSeconds(15));
                // The consumer stays in the group while we list and describe it.
                Collection<GroupListing> groups = admin.listGroups().all().get(20, TimeUnit.SECONDS);
                List<String> ids = new ArrayList<>();
                for (GroupListing g : groups) ids.add(g.groupId());
                data.put("groups", ids);
                if (!ids.contains(group)) throw fail("list groups lacks " + group + ": " + ids);
                ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(group)).describedGroups().get(group).get(20, TimeUnit.SECONDS);
                data.put("state", String.valueOf(d.groupState()));
                data.put("members", d.members().size());
                if (d.members().isEmpty()) throw fail("describe shows state " + d.groupState() + " with no members");
                return "listed; state " + d.groupState() + ", " + d.members().size() + " member(s)";
            }
        }
    }

    String describeConfigs() throws Exception {
        try (Admin admin = admin()) {
            ensureTopic(admin, topic, 1);
            ConfigResource res = new ConfigResource(ConfigResource.Type.TOPIC, topic);
            Config cfg = admin.describeConfigs(List.of(res)).all().get(20, TimeUnit.SECONDS).get(res);
            Map<String, Object> found = new LinkedHashMap<>();
            for (String k : List.of("cleanup.policy", "retention.ms", "max.message.bytes")) {
                if (cfg.get(k) != null) found.put(k, cfg.get(k).value());
            }
            data.put("configs", found);
            data.put("count", cfg.entries().size());
            if (!found.containsKey("cleanup.policy") && !found.containsKey("retention.ms"))
                throw fail("neither cleanup.policy nor retention.ms in " + cfg.entries().size() + " configs");
            return cfg.entries().size() + " configs, " + found;
        }
    }

    String createPartitions() throws Exception {
        try (Admin admin = admin()) {
            ensureTopic(admin, topic, 1);
            admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(3))).all().get(20, TimeUnit.SECONDS);
            int n = waitPartitions(admin, topic, 3);
            data.put("partitions", n);
            return "1 -> " + n + " partitions";
        }
    }

    String deleteTopic() throws Exception {
        try (Admin admin = admin()) {
            ensureTopic(admin, topic, 1);
            admin.deleteTopics(List.of(topic)).all().get(20, TimeUnit.SECONDS);
            long until = Math.min(deadline, System.currentTimeMillis() + 30_000);
            while (System.currentTimeMillis() < until) {
                if (!admin.listTopics().names().get(20, TimeUnit.SECONDS).contains(topic)) return "deleted and gone from metadata";
                Thread.sleep(250);
            }
            throw fail("topic still listed 30 s after delete");
        }
    }

    String maxMessageSize() throws Exception {
        try (Admin admin = admin()) {
            ensureTopic(admin, topic, 1);
        }
        Map<String, Object> cfg = Map.of(ProducerConfig.MAX_REQUEST_SIZE_CONFIG, 4_000_000,
                ProducerConfig.COMPRESSION_TYPE_CONFIG, "none", ProducerConfig.RETRIES_CONFIG, 0);
        try (KafkaProducer<byte[], byte[]> p = producer(cfg)) {
            try {
                RecordMetadata md = p.send(new ProducerRecord<>(topic, 0, null, new byte[1_000_000])).get(30, TimeUnit.SECONDS);
                data.put("small_offset", md.offset());
            } catch (ExecutionException e) {
                data.put("small_error", errorName(e.getCause()));
                throw fail("record with a 1,000,000-byte value rejected: " + describe(e.getCause()));
            }
            try {
                RecordMetadata md = p.send(new ProducerRecord<>(topic, 0, null, new byte[1_100_000])).get(30, TimeUnit.SECONDS);
                data.put("error", null);
                throw fail("record with a 1,100,000-byte value accepted at offset " + md.offset());
            } catch (ExecutionException e) {
                data.put("error", errorName(e.getCause()));
                data.put("exception", e.getCause().getClass().getName());
                return "under the limit accepted; over it rejected with " + errorName(e.getCause());
            }
        }
    }

    // ---------------------------------------------------------------- admin scenarios (2nd batch)

    /** incrementalAlterConfigs SET retention.ms (Scenarios.ALTER_RETENTION_MS), then describeConfigs: value and source DYNAMIC_TOPIC_CONFIG. */
    String alterConfigs() throws Exception {
        try (Admin admin = admin()) {
            ensureTopic(admin, topic, 1);
            ConfigResource res = new ConfigResource(ConfigResource.Type.TOPIC, topic);
            admin.incrementalAlterConfigs(Map.of(res, List.of(new AlterConfigOp(new ConfigEntry("retention.ms", Scenarios.ALTER_RETENTION_MS), AlterConfigOp.OpType.SET))))
                    .all().get(20, TimeUnit.SECONDS);
            // Kafka applies the alter through its metadata log: poll the describe for up to 10 s.
            long until = Math.min(deadline, System.currentTimeMillis() + 10_000);
            ConfigEntry e;
            while (true) {
                Config cfg = admin.describeConfigs(List.of(res)).all().get(20, TimeUnit.SECONDS).get(res);
                e = cfg.get("retention.ms");
                boolean ok = e != null && Scenarios.ALTER_RETENTION_MS.equals(e.value()) && e.source() == ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG;
                if (ok || System.currentTimeMillis() > until) break;
                Thread.sleep(200);
            }
            if (e == null) throw fail("describeConfigs after the alter has no retention.ms");
            data.put("value", e.value());
            data.put("source", String.valueOf(e.source()));
            if (!Scenarios.ALTER_RETENTION_MS.equals(e.value()) || e.source() != ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG)
                throw fail("after incrementalAlterConfigs SET retention.ms=" + Scenarios.ALTER_RETENTION_MS + " describeConfigs shows " + e.value()
                        + " (source " + e.source() + "), want " + Scenarios.ALTER_RETENTION_MS + " (DYNAMIC_TOPIC_CONFIG)");
            return "incrementalAlterConfigs SET retention.ms=" + Scenarios.ALTER_RETENTION_MS + "; describeConfigs: " + e.value() + ", source " + e.source();
        }
    }

    /** describeTopics of a 3-partition topic: topic ID, leader, replicas and ISR (Ready.checkReplicas). */
    String describeTopic() throws Exception {
        try (Admin admin = admin()) {
            ensureTopic(admin, topic, 3);
            TopicDescription d = admin.describeTopics(List.of(topic)).allTopicNames().get(20, TimeUnit.SECONDS).get(topic);
            List<String> parts = new ArrayList<>();
            for (TopicPartitionInfo p : d.partitions()) {
                Ready.checkReplicas(p, rf);
                parts.add("p" + p.partition() + " leader/replicas/isr " + p.leader().id());
            }
            data.put("partitions", parts.size());
            data.put("topic_id", String.valueOf(d.topicId()));
            if (parts.size() != 3) throw fail(parts.size() + " partitions, want 3");
            if (d.topicId() == null || d.topicId().equals(org.apache.kafka.common.Uuid.ZERO_UUID)) throw fail("no topic ID");
            return "topic ID " + d.topicId() + ", internal " + d.isInternal() + "; " + String.join(", ", parts);
        }
    }

    void produceNumbered(int n) throws Exception {
        try (KafkaProducer<byte[], byte[]> p = producer(Map.of())) {
            List<java.util.concurrent.Future<RecordMetadata>> fs = new ArrayList<>();
            for (int i = 0; i < n; i++) fs.add(p.send(new ProducerRecord<>(topic, 0, b("k" + i), b("r" + i))));
            p.flush();
            for (var f : fs) f.get(30, TimeUnit.SECONDS);
        }
    }

    /** After producing LOG_DIRS_PRODUCE records, describeLogDirs of every broker shows the partition with size > 0. */
    String logDirs() throws Exception {
        try (Admin admin = admin()) {
            ensureTopic(admin, topic, 1);
            produceNumbered(Scenarios.LOG_DIRS_PRODUCE);
            List<Integer> ids = new ArrayList<>();
            for (Node n : admin.describeCluster().nodes().get(20, TimeUnit.SECONDS)) ids.add(n.id());
            Map<Integer, Map<String, LogDirDescription>> all = admin.describeLogDirs(ids).allDescriptions().get(20, TimeUnit.SECONDS);
            TopicPartition tp = new TopicPartition(topic, 0);
            List<String> found = new ArrayList<>();
            List<String> errors = new ArrayList<>();
            for (var b : all.entrySet()) {
                for (var d : b.getValue().entrySet()) {
                    if (d.getValue().error() != null) errors.add(d.getKey() + ": " + d.getValue().error());
                    ReplicaInfo ri = d.getValue().replicaInfos().get(tp);
                    if (ri == null) continue;
                    if (ri.size() <= 0) throw fail(tp + " in " + d.getKey() + " has size " + ri.size() + " after producing " + Scenarios.LOG_DIRS_PRODUCE + " records");
                    found.add("broker " + b.getKey() + " " + d.getKey() + ": " + tp + " size " + ri.size() + " offsetLag " + ri.offsetLag());
                }
            }
            data.put("found", found);
            if (found.isEmpty()) throw fail("describeLogDirs(" + ids + ") lists no dir with " + tp + " (errors: " + errors + ")");
            return String.join("; ", found);
        }
    }

    /** Produce DELETE_RECORDS_PRODUCE, deleteRecords before DELETE_RECORDS_BEFORE: that is the low watermark and the earliest offset. */
    String deleteRecords() throws Exception {
        try (Admin admin = admin()) {
            ensureTopic(admin, topic, 1);
            produceNumbered(Scenarios.DELETE_RECORDS_PRODUCE);
            int before = Scenarios.DELETE_RECORDS_BEFORE;
            TopicPartition tp = new TopicPartition(topic, 0);
            DeletedRecords dr = admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(before))).lowWatermarks().get(tp).get(20, TimeUnit.SECONDS);
            long earliest = offset(admin, tp, OffsetSpec.earliest());
            data.put("low_watermark", dr.lowWatermark());
            data.put("earliest", earliest);
            if (dr.lowWatermark() != before || earliest != before)
                throw fail("deleteRecords before " + before + ": low watermark " + dr.lowWatermark() + ", earliest offset " + earliest
                        + " (want " + before + ", " + before + ")");
            return "deleteRecords before " + before + ": low watermark " + before + "; earliest offset " + before;
        }
    }

    /** group_commit_resume with group.protocol=consumer (KIP-848); listGroups must report type CONSUMER. */
    String groupConsumerProtocol() throws Exception {
        String group = Scenarios.group(topic, args);
        try (Admin admin = admin()) {
            ensureTopic(admin, topic, 1);
            try (KafkaProducer<byte[], byte[]> p = producer(Map.of())) {
                for (int i = 0; i < 20; i++) p.send(new ProducerRecord<>(topic, 0, b("k" + i), b("v" + i)));
                p.flush();
            }
            TopicPartition tp = new TopicPartition(topic, 0);
            Map<String, Object> gc = Map.of(ConsumerConfig.GROUP_ID_CONFIG, group, ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 10,
                    ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
            int consumed = 0;
            String type;
            try (KafkaConsumer<byte[], byte[]> c = consumer(gc)) {
                c.subscribe(List.of(topic));
                long until = Math.min(deadline - 15_000, System.currentTimeMillis() + 25_000);
                while (consumed < 10 && System.currentTimeMillis() < until) {
                    for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(500))) if (consumed < 10) consumed++;
                }
                if (consumed < 10) throw fail("first consumer (group.protocol=consumer) got " + consumed + " of 10 records");
                c.commitSync(Map.of(tp, new OffsetAndMetadata(10)), Duration.ofSeconds(15));
                type = "(not listed)";
                for (GroupListing g : admin.listGroups().all().get(20, TimeUnit.SECONDS)) {
                    if (g.groupId().equals(group)) type = g.type().map(String::valueOf).orElse("(no type)");
                }
            }
            data.put("group_type", type);
            if (!String.valueOf(GroupType.CONSUMER).equals(type)) throw fail("listGroups reports group type " + type + ", want " + GroupType.CONSUMER);
            long first = -1;
            try (KafkaConsumer<byte[], byte[]> c = consumer(gc)) {
                c.subscribe(List.of(topic));
                long until = Math.min(deadline, System.currentTimeMillis() + 25_000);
                while (first < 0 && System.currentTimeMillis() < until) {
                    for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(500))) { first = r.offset(); break; }
                }
            }
            data.put("resumed_at", first);
            if (first != 10) throw fail("second consumer (group.protocol=consumer) resumed at offset " + first + ", want 10");
            return "group.protocol=consumer (group type " + type + "): committed 10, resumed at 10";
        }
    }

    static String errorName(Throwable t) {
        if (t instanceof ApiException) {
            Errors e = Errors.forException(t);
            if (e != Errors.UNKNOWN_SERVER_ERROR) return e.name();
        }
        return t.getClass().getSimpleName();
    }

    String crossProduce() throws Exception {
        try (Admin admin = admin()) {
            ensureTopic(admin, topic, 1);
        }
        try (KafkaProducer<byte[], byte[]> p = producer(Map.of(ProducerConfig.COMPRESSION_TYPE_CONFIG, "none"))) {
            for (Scenarios.Rec r : Scenarios.CROSS) {
                p.send(new ProducerRecord<>(topic, 0, b(r.key()), b(r.value()),
                        List.of(new RecordHeader(Scenarios.CROSS_HEADER, b(CLIENT))))).get(30, TimeUnit.SECONDS);
            }
        }
        data.put("produced", Scenarios.CROSS.size());
        return Scenarios.CROSS.size() + " CROSS records produced";
    }

    String crossConsume() throws Exception {
        String from = args.get("expect_from");
        List<ConsumerRecord<byte[], byte[]>> got;
        try (KafkaConsumer<byte[], byte[]> c = consumer(Map.of())) {
            got = readAll(c, partitions(topic, 1), Scenarios.CROSS.size(), 30_000);
        }
        List<Object> recs = new ArrayList<>();
        for (ConsumerRecord<byte[], byte[]> r : got) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("offset", r.offset());
            m.put("key", s(r.key()));
            m.put("value", s(r.value()));
            List<Object> hs = new ArrayList<>();
            for (Header h : r.headers()) hs.add(Arrays.asList(h.key(), s(h.value())));
            m.put("headers", hs);
            recs.add(m);
        }
        data.put("records", recs);
        List<Scenarios.Rec> want = Scenarios.CROSS;
        if (got.size() != want.size()) throw fail("read " + got.size() + " records, want " + want.size());
        for (int i = 0; i < want.size(); i++) {
            ConsumerRecord<byte[], byte[]> r = got.get(i);
            Header[] hs = r.headers().toArray();
            boolean ok = r.offset() == i && want.get(i).key().equals(s(r.key())) && want.get(i).value().equals(s(r.value()))
                    && hs.length == 1 && hs[0].key().equals(Scenarios.CROSS_HEADER) && (from == null || from.equals(s(hs[0].value())));
            if (!ok) throw fail("record " + i + " differs from the CROSS set: offset " + r.offset() + " key " + s(r.key()));
        }
        return want.size() + " CROSS records read" + (from != null ? " from " + from : "");
    }

    // ---------------------------------------------------------------- helpers

    static String describe(Throwable t) {
        if (t == null) return "null";
        while ((t instanceof ExecutionException || t instanceof java.util.concurrent.CompletionException) && t.getCause() != null) t = t.getCause();
        StringBuilder sb = new StringBuilder(t.getClass().getName());
        if (t.getMessage() != null) sb.append(": ").append(t.getMessage());
        Throwable c = t.getCause();
        if (c != null && c != t) sb.append(" (caused by ").append(c.getClass().getName()).append(c.getMessage() != null ? ": " + c.getMessage() : "").append(")");
        return sb.toString();
    }

    private Runner() { this(null, null, Collections.emptyMap(), (short) 1); }
}
