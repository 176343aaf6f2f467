#!/usr/bin/env python3
"""Strata compat-tests runner for kafka-python.

Protocol: --bootstrap HOST:PORT --scenario NAME --topic TOPIC [--replication-factor N] [--arg K=V ...]; prints one JSON object
{"result","detail","data"} as its last stdout line and exits 0. Client logs go to stderr (WARNING and up).
"""
import logging
import sys
import time

logging.basicConfig(stream=sys.stderr, level=logging.WARNING,
                    format="%(asctime)s %(levelname)s %(name)s %(message)s")

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition  # noqa: E402
from kafka.admin import ConfigResource, ConfigResourceType, OffsetSpec, OffsetTimestamp  # noqa: E402
from kafka.errors import TopicAlreadyExistsError  # noqa: E402
from kafka.structs import OffsetAndMetadata  # noqa: E402

from runner_common import (ALTER_RETENTION_MS, BASE_TS, CROSS, CROSS_HEADER, DELETE_RECORDS_BEFORE,  # noqa: E402
                           DELETE_RECORDS_PRODUCE, DYNAMIC_TOPIC_CONFIG, HEADERS, HEADERS_RECORDS,
                           LIST_OFFSETS_RECORDS, LOG_DIRS_PRODUCE, PRODUCE_SET, TS_STEP, Deadline, check_cross,
                           check_produce_consume, check_replicas, fail, group_name, headers_key, headers_value,
                           main, skip, wait_ready)

from auth_common import (AUTH_RECORDS, REFUSAL_BOUND_S, check_auth, group_refused, how,  # noqa: E402
                         kafka_python_config, refused)

CLIENT = "kafka-python"


def err_name(e):
    """The Kafka error name kafka-python reports (e.g. MESSAGE_TOO_LARGE), else the exception class."""
    m = getattr(e, "message", None)
    return m if isinstance(m, str) and m.isupper() else type(e).__name__


class Runner:
    def __init__(self, bootstrap, topic, args, rf):
        self.bootstrap, self.topic, self.args, self.rf = bootstrap, topic, args, rf
        self.data = {}
        self.dl = Deadline()
        self.closers = []
        self._admin = None
        self.security = kafka_python_config(args)

    def close(self):
        for c in reversed(self.closers):
            try:
                c()
            except Exception:
                pass

    # ------------------------------------------------------------ clients
    def admin(self):
        if self._admin is None:
            self._admin = KafkaAdminClient(bootstrap_servers=self.bootstrap, client_id="compat-kafka-python-admin",
                                           request_timeout_ms=15000, **self.security)
            self.closers.append(self._admin.close)
        return self._admin

    def producer(self, **kw):
        cfg = dict(bootstrap_servers=self.bootstrap, client_id="compat-kafka-python-producer", acks="all",
                   linger_ms=5, request_timeout_ms=15000, max_block_ms=20000, **self.security)
        cfg.update(kw)
        p = KafkaProducer(**cfg)
        self.closers.append(lambda: p.close(timeout=3))
        return p

    def consumer(self, **kw):
        cfg = dict(bootstrap_servers=self.bootstrap, client_id="compat-kafka-python-consumer", group_id=None,
                   auto_offset_reset="earliest", enable_auto_commit=False, request_timeout_ms=30000, **self.security)
        cfg.update(kw)
        c = KafkaConsumer(**cfg)
        self.closers.append(lambda: c.close(autocommit=False))
        return c

    def ensure_topic(self, n, topic=None):
        topic = topic or self.topic
        try:
            self.admin().create_topics({topic: {"num_partitions": n, "replication_factor": self.rf}}, timeout_ms=15000)
        except TopicAlreadyExistsError:
            pass
        return self.wait_partitions(n, topic)

    def wait_partitions(self, n, topic=None):
        """Waits until describe_topics shows n partitions, each led by a broker describe_cluster lists that
        answers ListOffsets for it."""
        topic = topic or self.topic

        def metadata():
            brokers = [b.get("node_id", b.get("broker_id")) for b in self.admin().describe_cluster().get("brokers", [])]
            for t in self.admin().describe_topics([topic]):
                if t.get("topic", t.get("name")) == topic and t.get("error_code", 0) == 0:
                    parts = sorted(t["partitions"], key=lambda p: p.get("partition_index", p.get("partition", 0)))
                    return brokers, [p.get("leader", p.get("leader_id", -1)) for p in parts]
            raise fail(f"describe_topics does not show {topic}")

        def served():
            self.admin().list_partition_offsets({TopicPartition(topic, p): OffsetSpec.LATEST for p in range(n)},
                                                timeout_ms=5000)

        return wait_ready(topic, n, self.dl, metadata, served)

    def read_all(self, c, partitions, want, cap=30.0):
        tps = [TopicPartition(self.topic, p) for p in range(partitions)]
        c.assign(tps)
        c.seek_to_beginning(*tps)
        out = []
        end = time.monotonic() + self.dl.remaining(cap)
        while len(out) < want and time.monotonic() < end:
            for recs in c.poll(timeout_ms=500).values():
                out.extend(recs)
        return out

    # ------------------------------------------------------------ scenarios
    def s_metadata(self):
        self.ensure_topic(3)
        cl = self.admin().describe_cluster()
        brokers = cl.get("brokers", [])
        self.data["brokers"] = [{"id": b.get("node_id", b.get("broker_id")), "host": b.get("host"), "port": b.get("port")} for b in brokers]
        if not brokers:
            raise fail(f"no brokers in metadata: {cl}")
        for b in self.data["brokers"]:
            if not b["host"] or not b["port"]:
                raise fail(f"broker without host/port: {b}")
        topics = self.admin().list_topics()
        self.data["topic_listed"] = self.topic in topics
        if self.topic not in topics:
            raise fail(f"topic {self.topic} not listed")
        return f"{len(brokers)} broker(s), topic listed"

    def s_create_topic(self):
        self.admin().create_topics({self.topic: {"num_partitions": 3, "replication_factor": self.rf}}, timeout_ms=15000)
        self.data["partitions"] = self.wait_partitions(3)
        return f"created with {self.data['partitions']} partitions"

    def _produce_consume(self, codec):
        self.ensure_topic(3)
        p = self.producer(compression_type=None if codec == "none" else codec)
        futs = [p.send(self.topic, key=None if k is None else k.encode(), value=v.encode()) for k, v in PRODUCE_SET]
        p.flush(timeout=30)
        for f in futs:
            f.get(timeout=30)
        got = self.read_all(self.consumer(), 3, len(PRODUCE_SET))
        self.data["consumed"] = len(got)
        recs = [(r.partition, r.offset, None if r.key is None else r.key.decode(), r.value.decode()) for r in got]
        detail, used = check_produce_consume(recs, codec)
        self.data["partitions_used"] = used
        return detail

    def s_produce_consume_none(self):
        return self._produce_consume("none")

    def s_produce_consume_gzip(self):
        return self._produce_consume("gzip")

    def s_produce_consume_snappy(self):
        return self._produce_consume("snappy")

    def s_produce_consume_lz4(self):
        return self._produce_consume("lz4")

    def s_produce_consume_zstd(self):
        return self._produce_consume("zstd")

    def s_headers(self):
        self.ensure_topic(1)
        p = self.producer()
        for i in range(HEADERS_RECORDS):
            p.send(self.topic, key=headers_key(i).encode(), value=headers_value(i).encode(), partition=0,
                   headers=list(HEADERS)).get(timeout=30)
        got = self.read_all(self.consumer(), 1, HEADERS_RECORDS)
        if len(got) != HEADERS_RECORDS:
            raise fail(f"consumed {len(got)} records, want {HEADERS_RECORDS}")
        for r in got:
            hs = [(k, bytes(v)) for k, v in r.headers]
            if hs != HEADERS:
                raise fail(f"offset {r.offset}: headers {hs}, want {HEADERS}")
        return f"{HEADERS_RECORDS} records with {len(HEADERS)} headers each (order, duplicates, binary value) intact"

    def s_list_offsets(self):
        base = BASE_TS
        self.ensure_topic(1)
        p = self.producer()
        for i in range(LIST_OFFSETS_RECORDS):
            p.send(self.topic, key=f"k{i}".encode(), value=f"v{i}".encode(), partition=0, timestamp_ms=base + i * TS_STEP).get(timeout=30)
        tp = TopicPartition(self.topic, 0)

        def lo(spec):
            r = self.admin().list_partition_offsets({tp: spec}, timeout_ms=15000)[tp]
            return -1 if r is None or r.offset is None else r.offset

        earliest, latest = lo(OffsetSpec.EARLIEST), lo(OffsetSpec.LATEST)
        by_ts, after = lo(OffsetTimestamp(base + 5000)), lo(OffsetTimestamp(base + 60_000))
        self.data.update(earliest=earliest, latest=latest, by_timestamp=by_ts, after_last=after)
        if (earliest, latest, by_ts, after) != (0, 10, 5, -1):
            raise fail(f"earliest={earliest} latest={latest} byTimestamp={by_ts} afterLast={after} (want 0, 10, 5, -1)")
        return "earliest 0, latest 10, by timestamp 5, after last -1"

    def s_idempotent_produce(self):
        self.ensure_topic(1)
        p = self.producer(enable_idempotence=True)
        futs = [p.send(self.topic, key=f"k{i}".encode(), value=f"v{i}".encode()) for i in range(100)]
        p.flush(timeout=30)
        for f in futs:
            f.get(timeout=30)
        c = self.consumer()
        got = self.read_all(c, 1, 100)
        for recs in c.poll(timeout_ms=500).values():
            got.extend(recs)
        distinct = len({r.value for r in got})
        self.data.update(consumed=len(got), distinct=distinct)
        if len(got) != 100 or distinct != 100:
            raise fail(f"consumed {len(got)} records, {distinct} distinct; want exactly 100")
        return "100 records exactly once"

    def s_group_commit_resume(self):
        group = group_name(self.topic, self.args)
        self.ensure_topic(1)
        p = self.producer()
        for i in range(20):
            p.send(self.topic, key=f"k{i}".encode(), value=f"v{i}".encode(), partition=0)
        p.flush(timeout=30)
        tp = TopicPartition(self.topic, 0)
        c = self.consumer(group_id=group, max_poll_records=10)
        c.subscribe([self.topic])
        n = 0
        end = time.monotonic() + self.dl.remaining(20)
        while n < 10 and time.monotonic() < end:
            for recs in c.poll(timeout_ms=500).values():
                n += len(recs)
        if n < 10:
            raise fail(f"first consumer got {n} of 10 records")
        c.commit({tp: OffsetAndMetadata(10, "", -1)})
        c.close(autocommit=False)
        c2 = self.consumer(group_id=group)
        c2.subscribe([self.topic])
        first = None
        end = time.monotonic() + self.dl.remaining(20)
        while first is None and time.monotonic() < end:
            for recs in c2.poll(timeout_ms=500).values():
                if recs and first is None:
                    first = recs[0].offset
        self.data["resumed_at"] = first
        if first != 10:
            raise fail(f"second consumer resumed at offset {first}, want 10")
        return "committed 10, resumed at 10"

    def s_transactions(self):
        self.ensure_topic(1)
        p = self.producer(transactional_id=f"compat-kafka-python-{self.topic}", enable_idempotence=True)
        p.init_transactions()
        p.begin_transaction()
        for i in range(5):
            p.send(self.topic, key=f"k{i}".encode(), value=f"committed-{i}".encode(), partition=0)
        p.commit_transaction()
        p.begin_transaction()
        for i in range(5):
            p.send(self.topic, key=f"k{i}".encode(), value=f"aborted-{i}".encode(), partition=0)
        p.flush(timeout=30)
        p.abort_transaction()
        c = self.consumer(isolation_level="read_committed")
        got = self.read_all(c, 1, 5, cap=20)
        for recs in c.poll(timeout_ms=2000).values():
            got.extend(recs)
        vals = [r.value.decode() for r in got]
        self.data["values"] = vals
        want = [f"committed-{i}" for i in range(5)]
        if vals != want:
            raise fail(f"read_committed saw {vals}, want {want}")
        return "read_committed saw exactly the 5 committed records"

    def s_describe_list_groups(self):
        group = group_name(self.topic, self.args)
        self.ensure_topic(1)
        p = self.producer()
        for i in range(5):
            p.send(self.topic, value=f"v{i}".encode(), partition=0)
        p.flush(timeout=30)
        c = self.consumer(group_id=group)
        c.subscribe([self.topic])
        n = 0
        end = time.monotonic() + self.dl.remaining(20)
        while n < 5 and time.monotonic() < end:
            for recs in c.poll(timeout_ms=500).values():
                n += len(recs)
        if n < 5:
            raise fail(f"group consumer got {n} of 5 records")
        c.commit()
        groups = self.admin().list_groups()
        ids = [g["group_id"] if isinstance(g, dict) else g[0] for g in groups]
        self.data["groups"] = ids
        if group not in ids:
            raise fail(f"list groups lacks {group}: {ids}")
        d = self.admin().describe_groups([group])[group]
        state = d.get("group_state", d.get("state"))
        members = d.get("members", [])
        self.data.update(state=str(state), members=len(members))
        if not members:
            raise fail(f"describe shows state {state} with no members")
        return f"listed; state {state}, {len(members)} member(s)"

    def s_describe_configs(self):
        self.ensure_topic(1)
        res = self.admin().describe_configs([ConfigResource(ConfigResourceType.TOPIC, self.topic)], config_filter="all")
        cfgs = {}
        for by_name in res.values():
            for name, entries in by_name.items():
                if name == self.topic:
                    cfgs = entries
        found = {}
        for k in ("cleanup.policy", "retention.ms", "max.message.bytes"):
            if k in cfgs:
                v = cfgs[k]
                found[k] = v.get("value", v.get("config_value")) if isinstance(v, dict) else v
        self.data.update(configs=found, count=len(cfgs))
        if "cleanup.policy" not in found and "retention.ms" not in found:
            raise fail(f"neither cleanup.policy nor retention.ms in {len(cfgs)} configs: {res}")
        return f"{len(cfgs)} configs, {found}"

    def s_create_partitions(self):
        self.ensure_topic(1)
        self.admin().create_partitions({self.topic: 3}, timeout_ms=15000)
        self.data["partitions"] = self.wait_partitions(3)
        return f"1 -> {self.data['partitions']} partitions"

    def s_delete_topic(self):
        self.ensure_topic(1)
        self.admin().delete_topics([self.topic], timeout_ms=15000)
        end = time.monotonic() + self.dl.remaining(30)
        while time.monotonic() < end:
            if self.topic not in self.admin().list_topics():
                return "deleted and gone from metadata"
            time.sleep(0.25)
        raise fail("topic still listed 30 s after delete")

    def s_max_message_size(self):
        self.ensure_topic(1)
        p = self.producer(max_request_size=4_000_000, retries=0, compression_type=None)
        try:
            md = p.send(self.topic, value=b"\0" * 1_000_000, partition=0).get(timeout=30)
            self.data["small_offset"] = md.offset
        except Exception as e:
            self.data["small_error"] = err_name(e)
            raise fail(f"record with a 1,000,000-byte value rejected: {e!r}")
        try:
            md = p.send(self.topic, value=b"\0" * 1_100_000, partition=0).get(timeout=30)
        except Exception as e:
            self.data.update(error=err_name(e), errno=getattr(e, "errno", None), exception=repr(e))
            return f"under the limit accepted; over it rejected with {err_name(e)}"
        self.data["error"] = None
        raise fail(f"record with a 1,100,000-byte value accepted at offset {md.offset}")

    # ------------------------------------------------------------ admin scenarios (2nd batch)
    def _topic_configs(self):
        res = self.admin().describe_configs([ConfigResource(ConfigResourceType.TOPIC, self.topic)], config_filter="all")
        for by_name in res.values():
            for name, entries in by_name.items():
                if name == self.topic:
                    return entries
        return {}

    def s_alter_configs(self):
        self.ensure_topic(1)
        # alter_configs picks IncrementalAlterConfigs when the broker offers it (incremental=None).
        self.admin().alter_configs([ConfigResource(ConfigResourceType.TOPIC, self.topic, configs={"retention.ms": ALTER_RETENTION_MS})])
        # Kafka applies the alter through its metadata log: poll the describe for up to 10 s.
        end = time.monotonic() + self.dl.remaining(10)
        while True:
            e = self._topic_configs().get("retention.ms")
            if e is None:
                raise fail("describe_configs after the alter has no retention.ms")
            value = e.get("value", e.get("config_value")) if isinstance(e, dict) else e
            source = str(e.get("config_source")) if isinstance(e, dict) else "?"
            if (value == ALTER_RETENTION_MS and source == DYNAMIC_TOPIC_CONFIG) or time.monotonic() > end:
                break
            time.sleep(0.2)
        self.data.update(value=value, source=source)
        if value != ALTER_RETENTION_MS or source != DYNAMIC_TOPIC_CONFIG:
            raise fail(f"after alter_configs retention.ms={ALTER_RETENTION_MS} describe_configs shows {value} (source {source}), "
                       f"want {ALTER_RETENTION_MS} ({DYNAMIC_TOPIC_CONFIG})")
        return f"alter_configs (incremental when offered) retention.ms={ALTER_RETENTION_MS}; describe_configs: {value}, source {source}"

    def s_describe_topic(self):
        self.ensure_topic(3)
        ts = [t for t in self.admin().describe_topics([self.topic]) if t.get("topic", t.get("name")) == self.topic]
        if not ts or ts[0].get("error_code", 0) != 0:
            raise fail(f"describe_topics: {ts}")
        t = ts[0]
        parts = []
        for p in sorted(t["partitions"], key=lambda p: p.get("partition_index", p.get("partition", 0))):
            pid = p.get("partition_index", p.get("partition"))
            lid = p.get("leader_id", p.get("leader", -1))
            reps = list(p.get("replica_nodes", p.get("replicas", [])))
            isr = list(p.get("isr_nodes", p.get("isr", [])))
            check_replicas(pid, lid, reps, isr, self.rf)
            parts.append(f"p{pid} leader/replicas/isr {lid}")
        self.data.update(partitions=len(parts), topic_id=str(t.get("topic_id")))
        if len(parts) != 3:
            raise fail(f"{len(parts)} partitions, want 3")
        return f"describe_topics: topic ID {t.get('topic_id')}; " + ", ".join(parts)

    def _produce_numbered(self, n):
        p = self.producer()
        futs = [p.send(self.topic, key=f"k{i}".encode(), value=f"r{i}".encode(), partition=0) for i in range(n)]
        p.flush(timeout=30)
        for f in futs:
            f.get(timeout=30)

    def s_log_dirs(self):
        self.ensure_topic(1)
        self._produce_numbered(LOG_DIRS_PRODUCE)
        res = self.admin().describe_log_dirs(topic_partitions={self.topic: [0]})
        found, errors = [], []
        for b in res:
            for d in b.get("log_dirs", []):
                if d.get("error_code", 0):
                    errors.append(f"broker {b.get('broker')} {d.get('log_dir')}: error {d.get('error_code')}")
                for t in d.get("topics", []):
                    if t.get("name", t.get("topic")) != self.topic:
                        continue
                    for p in t.get("partitions", []):
                        if p.get("partition_index", p.get("partition")) != 0:
                            continue
                        size = p.get("partition_size", p.get("size", -1))
                        if size <= 0:
                            raise fail(f"describe_log_dirs: {self.topic}-0 in {d.get('log_dir')} has size {size} after producing {LOG_DIRS_PRODUCE} records")
                        found.append(f"broker {b.get('broker')} {d.get('log_dir')}: {self.topic}-0 size {size} offsetLag {p.get('offset_lag')}")
        self.data["found"] = found
        if not found:
            raise fail(f"describe_log_dirs lists no dir with {self.topic}-0 (errors {errors}): {res}")
        return "; ".join(found)

    def s_delete_records(self):
        self.ensure_topic(1)
        self._produce_numbered(DELETE_RECORDS_PRODUCE)
        tp = TopicPartition(self.topic, 0)
        before = DELETE_RECORDS_BEFORE
        r = self.admin().delete_records({tp: before}, timeout_ms=15000)
        lw = r[tp]["low_watermark"]
        e = self.admin().list_partition_offsets({tp: OffsetSpec.EARLIEST}, timeout_ms=15000)[tp]
        earliest = -1 if e is None or e.offset is None else e.offset
        self.data.update(low_watermark=lw, earliest=earliest)
        if (lw, earliest) != (before, before):
            raise fail(f"delete_records before {before}: low watermark {lw}, earliest offset {earliest} (want {before}, {before})")
        return f"delete_records before {before}: low watermark {before}; earliest offset {before}"

    def s_consumer_groups_cli(self):
        raise skip("kafka-cli only: checks the kafka-consumer-groups tool's output")

    def s_group_consumer_protocol(self):
        raise skip("kafka-python implements only the classic group protocol (no ConsumerGroupHeartbeat / KIP-848)")

    def s_cross_produce(self):
        self.ensure_topic(1)
        p = self.producer(compression_type=None)
        for k, v in CROSS:
            p.send(self.topic, key=k.encode(), value=v.encode(), partition=0,
                   headers=[(CROSS_HEADER, CLIENT.encode())]).get(timeout=30)
        self.data["produced"] = len(CROSS)
        return f"{len(CROSS)} CROSS records produced"

    def s_cross_consume(self):
        got = self.read_all(self.consumer(), 1, len(CROSS))
        recs = [{"offset": r.offset, "key": None if r.key is None else r.key.decode(),
                 "value": None if r.value is None else r.value.decode(),
                 "headers": [[k, bytes(v).decode()] for k, v in r.headers]} for r in got]
        self.data["records"] = recs
        return check_cross(recs, self.args.get("expect_from"))


    # ------------------------------------------------------------ secure columns
    def _auth(self, in_group=False):
        """Produce the auth records and consume them back, from partition 0 or (acl_allowed) in the group."""
        try:
            p = self.producer()
            futures = [p.send(self.topic, key=k.encode(), value=v.encode(), partition=0) for k, v in AUTH_RECORDS]
            p.flush(timeout=20)
            for f in futures:
                f.get(timeout=20)
        except Exception as e:
            raise fail(f"{how(self.args)}: produce: {err_name(e)}: {e}")
        if in_group:
            recs = self.group_read(len(AUTH_RECORDS), cap=20.0)
        else:
            recs = self.read_all(self.consumer(), 1, len(AUTH_RECORDS), cap=20.0)
        return check_auth(self.args, [(r.key.decode(), r.value.decode()) for r in recs])

    s_auth_plain = s_auth_scram_sha_256 = s_auth_scram_sha_512 = s_auth_mtls = _auth

    def s_acl_allowed(self):
        return self._auth(in_group=True)

    def group_read(self, want, cap):
        """acl_allowed's consume: in the scenario's group, until want records or cap seconds."""
        c = self.consumer(group_id=group_name(self.topic, self.args))
        c.subscribe([self.topic])
        out = []
        end = time.monotonic() + self.dl.remaining(cap)
        while len(out) < want and time.monotonic() < end:
            for recs in c.poll(timeout_ms=200).values():
                out.extend(recs)
        return out

    def _refused(self, scenario):
        # kafka-python retries a failed authentication as any failed connection and raises only when its
        # bootstrap times out; the SaslAuthenticationFailedError goes to its log.
        block = (REFUSAL_BOUND_S - 5) * 1000
        try:
            p = self.producer(max_block_ms=block, bootstrap_timeout_ms=block)
            p.send(self.topic, value=b"refused", partition=0).get(timeout=block / 1000)
            err = None
        except Exception as e:
            err = f"{type(e).__name__}: {e}"
        return refused(scenario, self.data, err)

    def s_auth_bad_password(self):
        return self._refused("auth_bad_password")

    def s_auth_no_tls(self):
        return self._refused("auth_no_tls")

    def s_acl_denied(self):
        return self._refused("acl_denied")

    def s_acl_deny_wins(self):
        return self._refused("acl_deny_wins")

    def s_acl_group_denied(self):
        """Consuming in the scenario's group as a user who may read the topic but not the group: poll raises."""
        c = self.consumer(group_id=group_name(self.topic, self.args))
        c.subscribe([self.topic])
        end = time.monotonic() + REFUSAL_BOUND_S
        err = f"hung: no error within {REFUSAL_BOUND_S}s"
        try:
            while time.monotonic() < end:
                c.poll(timeout_ms=200)
        except Exception as e:
            err = f"{type(e).__name__}: {e}"
        return group_refused(self.topic, self.data, err)


if __name__ == "__main__":
    main(Runner)
