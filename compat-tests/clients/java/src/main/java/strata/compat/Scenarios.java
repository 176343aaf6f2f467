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
            Path jar = Path.of(Scenarios.class.getProtectionDomain().getCodeSource().getLocation().toURI());
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

    private static List<Rec> recs(Object list) {
        List<Rec> out = new ArrayList<>();
        for (Object o : (List<?>) list) {
            Map<?, ?> m = (Map<?, ?>) o;
            out.add(new Rec((String) m.get("key"), (String) m.get("value")));
        }
        return List.copyOf(out);
    }
}
