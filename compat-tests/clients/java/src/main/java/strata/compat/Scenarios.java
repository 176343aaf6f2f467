package strata.compat;

import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;

import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;

/**
 * The scenario data every runner (Go, Python, kafkajs, Java) reads: compat-tests/scenarios/scenarios.json,
 * found from the runner jar's place (compat-tests/.cache/java/runner.jar).
 */
final class Scenarios {
    private Scenarios() {}

    /** A record of a data set; a null key is a null key. */
    record Rec(String key, String value) {}

    static final Map<String, Object> DATA = load();

    static final List<Rec> PRODUCE_SET = recs(section("produce_consume").get("records"));
    static final int HEADERS_RECORDS = num(section("headers").get("records"));
    static final String HEADERS_KEY_PREFIX = (String) section("headers").get("key_prefix");
    static final String HEADERS_VALUE_PREFIX = (String) section("headers").get("value_prefix");
    static final long BASE_TS = (Long) section("list_offsets").get("base_timestamp_ms");
    static final long TS_STEP = (Long) section("list_offsets").get("step_ms");
    static final int LIST_OFFSETS_RECORDS = num(section("list_offsets").get("records"));
    static final String ALTER_RETENTION_MS = (String) section("alter_configs").get("retention_ms");
    static final int DELETE_RECORDS_PRODUCE = num(section("delete_records").get("produce"));
    static final int DELETE_RECORDS_BEFORE = num(section("delete_records").get("before"));
    static final int LOG_DIRS_PRODUCE = num(section("log_dirs").get("produce"));
    static final String CROSS_HEADER = (String) section("cross").get("header");
    static final List<Rec> CROSS = recs(section("cross").get("records"));
    static final int AUTH_RECORDS = num(section("auth").get("records"));
    static final String AUTH_KEY_PREFIX = (String) section("auth").get("key_prefix");
    static final String AUTH_VALUE_PREFIX = (String) section("auth").get("value_prefix");
    static final long AUTH_REFUSAL_BOUND_MS = 1000L * num(section("auth").get("refusal_bound_s"));

    /**
     * The data of the Kafka 4.4 scenarios, read on their first use, so a runner given an older scenarios.json still runs
     * the other scenarios.
     */
    static final class K44 {
        private K44() {}

        static final List<String> TXN_V2_ENDS = strings(section("transactions_v2").get("ends"));
        static final int TXN_V2_RECORDS = num(section("transactions_v2").get("records"));
        static final String TXN_V2_PREFIX = (String) section("transactions_v2").get("value_prefix");
        static final int FETCH_RECORDS = num(section("fetch_sessions").get("records_per_partition"));
        static final int FETCH_SECOND_ROUND = num(section("fetch_sessions").get("second_round_partitions"));
        static final int RESTART_MEMBERS = num(section("group_consumer_restart").get("members"));
        static final int RESTART_BEFORE = num(section("group_consumer_restart").get("records_before"));
        static final int RESTART_AFTER = num(section("group_consumer_restart").get("records_after"));
        static final String RESTART_SESSION_TIMEOUT_MS = (String) section("group_consumer_restart").get("session_timeout_ms");
        static final String GROUP_CONFIG_NAME = (String) section("group_configs").get("name");
        static final String GROUP_CONFIG_VALUE = (String) section("group_configs").get("value");
    }

    /** A scenario's time, within the orchestrator's timeout of it (cmd/compat's scenarioTimeouts, rt.Budget): def, more for two. */
    /** scenarios.json's share section (rt.Share* in Go). */
    static final class Shares {
        private Shares() {}
        static final int RECORDS = num(section("share").get("records"));
        static final String VALUE_PREFIX = (String) section("share").get("value_prefix");
        static final String SENTINEL = (String) section("share").get("sentinel");
        static final int POISON = num(section("share").get("poison"));
        static final String AUTO_OFFSET_RESET = (String) section("share").get("auto_offset_reset");
        static final String LOCK_DURATION_MS = (String) section("share").get("lock_duration_ms");
        static final String DELIVERY_LIMIT = (String) section("share").get("delivery_count_limit");
        static final int TXN_RECORDS = num(section("share").get("txn_records"));
    }

    /** The value of the share scenarios' record i (as rt.ShareValue). */
    static String shareValue(int i) { return Shares.VALUE_PREFIX + i; }

    /** The value of share_read_committed's record i of transaction txn (as rt.ShareTxnValue). */
    static String shareTxnValue(int txn, int i) { return Shares.VALUE_PREFIX + txn + "-" + K44.TXN_V2_ENDS.get(txn) + "-" + i; }

    static long budgetMs(String scenario, long def) {
        switch (scenario) {
            case "fetch_sessions": return 105_000;
            case "group_consumer_restart": return 285_000;
            default: return def;
        }
    }

    /** The partition count of a scenario's topic. */
    static int partitions(String scenario) {
        Map<?, ?> p = section("partitions");
        Object n = ((Map<?, ?>) p.get("scenarios")).get(scenario);
        return num(n != null ? n : p.get("default"));
    }

    /** The value of record i of transactions_v2's transaction txn (as rt.TxnV2Value). */
    static String txnV2Value(int txn, int i) { return K44.TXN_V2_PREFIX + txn + "-" + K44.TXN_V2_ENDS.get(txn) + "-" + i; }

    /** The value of fetch_sessions' record i of partition p in round r (as rt.FetchValue). */
    static String fetchValue(int r, int p, int i) { return "r" + r + "-p" + p + "-" + i; }

    /** The headers scenario's header list (order and duplicates kept), fresh for each record. */
    static List<Header> headers() {
        List<Header> out = new ArrayList<>();
        for (Object o : (List<?>) section("headers").get("headers")) {
            Map<?, ?> h = (Map<?, ?>) o;
            out.add(new RecordHeader((String) h.get("key"), HexFormat.of().parseHex((String) h.get("value_hex"))));
        }
        return out;
    }

    /** The consumer group of a group scenario on topic, unless --arg group= names one. */
    static String group(String topic, Map<String, String> args) {
        return args.getOrDefault("group", ((String) DATA.get("group")).replace("{topic}", topic));
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> load() {
        try {
            // The jar as the command line names it (compat-tests/.cache/java may be a symlink to another checkout's
            // cache, which the code source's canonical path would follow), else where it was loaded from.
            String cp = System.getProperty("java.class.path", "");
            Path jar = cp.endsWith(".jar") && !cp.contains(java.io.File.pathSeparator) ? Path.of(cp).toAbsolutePath()
                    : Path.of(Scenarios.class.getProtectionDomain().getCodeSource().getLocation().toURI());
            Path file = jar.getParent().getParent().getParent().resolve("scenarios").resolve("scenarios.json");
            return (Map<String, Object>) Json.parse(Files.readString(file, StandardCharsets.UTF_8));
        } catch (java.io.IOException | URISyntaxException e) {
            throw new IllegalStateException("cannot read scenarios.json: " + e, e);
        }
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> section(String name) {
        return (Map<String, Object>) DATA.get(name);
    }

    private static int num(Object o) { return Math.toIntExact((Long) o); }

    private static List<String> strings(Object list) {
        List<String> out = new ArrayList<>();
        for (Object o : (List<?>) list) out.add((String) o);
        return List.copyOf(out);
    }

    private static List<Rec> recs(Object list) {
        List<Rec> out = new ArrayList<>();
        for (Object o : (List<?>) list) {
            Map<?, ?> m = (Map<?, ?>) o;
            out.add(new Rec((String) m.get("key"), (String) m.get("value")));
        }
        return List.copyOf(out);
    }
}
