#!/usr/bin/env python3
"""Strata compat-tests runner for confluent-kafka-python (bundled librdkafka).

Protocol: --bootstrap HOST:PORT --scenario NAME --topic TOPIC [--replication-factor N] [--arg K=V ...]; prints one JSON object
{"result","detail","data"} as its last stdout line and exits 0. librdkafka logs go to stderr.
"""
import time

from confluent_kafka import (OFFSET_BEGINNING, Consumer, ConsumerGroupType, KafkaError,
                             KafkaException, Producer, TopicCollection, TopicPartition)
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,
                                   ConfigSource, NewPartitions, NewTopic, OffsetSpec,
                                   ResourceType)

from runner_common import (ALTER_RETENTION_MS, BASE_TS, CROSS, CROSS_HEADER, DELETE_RECORDS_BEFORE,
                           DELETE_RECORDS_PRODUCE, HEADERS, HEADERS_RECORDS, LIST_OFFSETS_RECORDS, PRODUCE_SET,
                           TS_STEP, Deadline, check_cross, check_produce_consume, check_replicas, fail, group_name,
                           headers_key, headers_value, main, skip, wait_ready)

from auth_common import (AUTH_RECORDS, REFUSAL_BOUND_S, check_auth, group_refused, how,  # noqa: E402
                         librdkafka_config, refused)

CLIENT = "confluent-kafka-python"


def kerr(e):
    """The KafkaError inside an exception, if any."""
    if isinstance(e, KafkaException) and e.args and isinstance(e.args[0], KafkaError):
        return e.args[0]
    return e if isinstance(e, KafkaError) else None


def err_name(e):
    k = kerr(e)
    return k.name() if k is not None else type(e).__name__


class Runner:
    def __init__(self, bootstrap, topic, args, rf):
        self.bootstrap, self.topic, self.args, self.rf = bootstrap, topic, args, rf
        self.data = {}
        self.dl = Deadline()
        self.closers = []
        self._admin = None
        self.security = librdkafka_config(args)

    def on_error(self, err):
        """librdkafka's background errors (e.g. coordinator lookups) end up in the failure detail."""
        self.data["last_error"] = str(err)

    def group_hint(self):
        if "last_error" in self.data:
            return f" (last client error: {self.data['last_error']})"
        return " (librdkafka surfaced no error; with debug=cgrp it logs 'no broker available for coordinator query' when FindCoordinator is unsupported)"

    def close(self):
        for c in reversed(self.closers):
            try:
                c()
            except Exception:
                pass

    # ------------------------------------------------------------ clients
    def admin(self):
        if self._admin is None:
            self._admin = AdminClient({"bootstrap.servers": self.bootstrap, "client.id": "compat-confluent-admin", **self.security})
        return self._admin

    def producer(self, **kw):
        cfg = {"bootstrap.servers": self.bootstrap, "client.id": "compat-confluent-producer", "acks": "all",
               "linger.ms": 5, "message.timeout.ms": 30000, **self.security}
        cfg.update(kw)
        return Producer(cfg)

    def consumer(self, **kw):
        cfg = {"bootstrap.servers": self.bootstrap, "client.id": "compat-confluent-consumer",
               # librdkafka requires a group.id; without subscribe() and commits it is not used.
               "group.id": f"{self.topic}-confluent-unused", "enable.auto.commit": False,
               "auto.offset.reset": "earliest", "enable.partition.eof": False,
               "error_cb": self.on_error, **self.security}
        cfg.update(kw)
        c = Consumer(cfg)
        self.closers.append(c.close)
        return c

    def produce_all(self, p, msgs):
        """msgs: list of kwargs for Producer.produce; waits for every delivery report, raises on errors."""
        errors, offsets = [], []

        def cb(err, msg):
            if err is not None:
                errors.append(err)
            else:
                offsets.append(msg.offset())

        for m in msgs:
            p.produce(self.topic, on_delivery=cb, **m)
            p.poll(0)
        left = p.flush(self.dl.remaining(30))
        if errors:
            raise KafkaException(errors[0])
        if left:
            raise fail(f"{left} message(s) not delivered before the deadline")
        return offsets

    def ensure_topic(self, n):
        fs = self.admin().create_topics([NewTopic(self.topic, num_partitions=n, replication_factor=self.rf)], operation_timeout=15)
        try:
            fs[self.topic].result(timeout=20)
        except KafkaException as e:
            if kerr(e) is None or kerr(e).code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise
        return self.wait_partitions(n)

    def wait_partitions(self, n):
        """Waits until list_topics (Metadata) shows n partitions, each led by a broker it lists that answers
        ListOffsets for it."""
        def metadata():
            md = self.admin().list_topics(topic=self.topic, timeout=10)
            t = md.topics.get(self.topic)
            if t is None or t.error is not None:
                raise fail(f"metadata: {t.error if t is not None else 'topic missing'}")
            leaders = [t.partitions[p].leader if p in t.partitions else -1 for p in range(len(t.partitions))]
            return set(md.brokers), leaders

        def served():
            tps = {TopicPartition(self.topic, p): OffsetSpec.latest() for p in range(n)}
            for f in self.admin().list_offsets(tps, request_timeout=5).values():
                f.result(timeout=10)

        return wait_ready(self.topic, n, self.dl, metadata, served)

    def read_all(self, c, partitions, want, cap=30.0, linger=0.0):
        c.assign([TopicPartition(self.topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        out = []
        end = time.monotonic() + self.dl.remaining(cap)
        while len(out) < want and time.monotonic() < end:
            for m in c.consume(num_messages=100, timeout=0.5):
                if m.error() is None:
                    out.append(m)
                elif m.error().code() != KafkaError._PARTITION_EOF:
                    raise KafkaException(m.error())
        end = time.monotonic() + self.dl.remaining(linger)
        while time.monotonic() < end:
            out.extend(m for m in c.consume(num_messages=100, timeout=0.2) if m.error() is None)
        return out

    def group_consume(self, c, want, cap):
        out = []
        end = time.monotonic() + self.dl.remaining(cap)
        while len(out) < want and time.monotonic() < end:
            for m in c.consume(num_messages=want - len(out), timeout=0.5):
                if m.error() is None:
                    out.append(m)
                else:
                    self.data["last_error"] = str(m.error())
        return out

    # ------------------------------------------------------------ scenarios
    def s_metadata(self):
        self.ensure_topic(3)
        md = self.admin().list_topics(timeout=15)
        self.data["brokers"] = [{"id": b.id, "host": b.host, "port": b.port} for b in md.brokers.values()]
        if not md.brokers:
            raise fail("no brokers in metadata")
        for b in md.brokers.values():
            if not b.host or not b.port:
                raise fail(f"broker without host/port: {b}")
        self.data["topic_listed"] = self.topic in md.topics
        if self.topic not in md.topics:
            raise fail(f"topic {self.topic} not listed")
        return f"{len(md.brokers)} broker(s), topic listed"

    def s_create_topic(self):
        fs = self.admin().create_topics([NewTopic(self.topic, num_partitions=3, replication_factor=self.rf)], operation_timeout=15)
        fs[self.topic].result(timeout=20)
        self.data["partitions"] = self.wait_partitions(3)
        return f"created with {self.data['partitions']} partitions"

    def _produce_consume(self, codec):
        self.ensure_topic(3)
        p = self.producer(**{"compression.type": codec})
        self.produce_all(p, [dict(key=None if k is None else k.encode(), value=v.encode()) for k, v in PRODUCE_SET])
        got = self.read_all(self.consumer(), 3, len(PRODUCE_SET))
        self.data["consumed"] = len(got)
        recs = [(m.partition(), m.offset(), None if m.key() is None else m.key().decode(), m.value().decode()) for m in got]
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
        self.produce_all(p, [dict(key=headers_key(i).encode(), value=headers_value(i).encode(), partition=0,
                                  headers=list(HEADERS)) for i in range(HEADERS_RECORDS)])
        got = self.read_all(self.consumer(), 1, HEADERS_RECORDS)
        if len(got) != HEADERS_RECORDS:
            raise fail(f"consumed {len(got)} records, want {HEADERS_RECORDS}")
        for m in got:
            hs = [(k, bytes(v)) for k, v in (m.headers() or [])]
            if hs != HEADERS:
                raise fail(f"offset {m.offset()}: headers {hs}, want {HEADERS}")
        return f"{HEADERS_RECORDS} records with {len(HEADERS)} headers each (order, duplicates, binary value) intact"

    def s_list_offsets(self):
        base = BASE_TS
        self.ensure_topic(1)
        p = self.producer()
        self.produce_all(p, [dict(key=f"k{i}".encode(), value=f"v{i}".encode(), partition=0, timestamp=base + i * TS_STEP)
                             for i in range(LIST_OFFSETS_RECORDS)])
        tp = TopicPartition(self.topic, 0)

        def lo(spec):
            return self.admin().list_offsets({tp: spec}, request_timeout=15)[tp].result(timeout=20).offset

        earliest, latest = lo(OffsetSpec.earliest()), lo(OffsetSpec.latest())
        by_ts, after = lo(OffsetSpec.for_timestamp(base + 5000)), lo(OffsetSpec.for_timestamp(base + 60_000))
        self.data.update(earliest=earliest, latest=latest, by_timestamp=by_ts, after_last=after)
        if (earliest, latest, by_ts, after) != (0, 10, 5, -1):
            raise fail(f"earliest={earliest} latest={latest} byTimestamp={by_ts} afterLast={after} (want 0, 10, 5, -1)")
        return "earliest 0, latest 10, by timestamp 5, after last -1"

    def s_idempotent_produce(self):
        self.ensure_topic(1)
        p = self.producer(**{"enable.idempotence": True})
        self.produce_all(p, [dict(key=f"k{i}".encode(), value=f"v{i}".encode()) for i in range(100)])
        got = self.read_all(self.consumer(), 1, 100, linger=0.5)
        distinct = len({m.value() for m in got})
        self.data.update(consumed=len(got), distinct=distinct)
        if len(got) != 100 or distinct != 100:
            raise fail(f"consumed {len(got)} records, {distinct} distinct; want exactly 100")
        return "100 records exactly once"

    def s_group_commit_resume(self):
        group = group_name(self.topic, self.args)
        self.ensure_topic(1)
        self.produce_all(self.producer(), [dict(key=f"k{i}".encode(), value=f"v{i}".encode(), partition=0) for i in range(20)])
        c = self.consumer(**{"group.id": group, "session.timeout.ms": 10000})
        c.subscribe([self.topic])
        got = self.group_consume(c, 10, 20)
        if len(got) < 10:
            raise fail(f"first consumer got {len(got)} of 10 records" + self.group_hint())
        c.commit(offsets=[TopicPartition(self.topic, 0, 10)], asynchronous=False)
        c.close()
        c2 = self.consumer(**{"group.id": group, "session.timeout.ms": 10000})
        c2.subscribe([self.topic])
        got = self.group_consume(c2, 1, 20)
        first = got[0].offset() if got else None
        self.data["resumed_at"] = first
        if first != 10:
            raise fail(f"second consumer resumed at offset {first}, want 10")
        return "committed 10, resumed at 10"

    def s_transactions(self):
        self.ensure_topic(1)
        p = self.producer(**{"transactional.id": f"compat-confluent-{self.topic}"})
        p.init_transactions(15)
        p.begin_transaction()
        for i in range(5):
            p.produce(self.topic, key=f"k{i}".encode(), value=f"committed-{i}".encode(), partition=0)
        p.commit_transaction(15)
        p.begin_transaction()
        for i in range(5):
            p.produce(self.topic, key=f"k{i}".encode(), value=f"aborted-{i}".encode(), partition=0)
        p.flush(15)
        p.abort_transaction(15)
        got = self.read_all(self.consumer(**{"isolation.level": "read_committed"}), 1, 5, cap=20, linger=2.0)
        vals = [m.value().decode() for m in got]
        self.data["values"] = vals
        want = [f"committed-{i}" for i in range(5)]
        if vals != want:
            raise fail(f"read_committed saw {vals}, want {want}")
        return "read_committed saw exactly the 5 committed records"

    def s_describe_list_groups(self):
        group = group_name(self.topic, self.args)
        self.ensure_topic(1)
        self.produce_all(self.producer(), [dict(value=f"v{i}".encode(), partition=0) for i in range(5)])
        c = self.consumer(**{"group.id": group, "session.timeout.ms": 10000})
        c.subscribe([self.topic])
        got = self.group_consume(c, 5, 20)
        if len(got) < 5:
            raise fail(f"group consumer got {len(got)} of 5 records" + self.group_hint())
        c.commit(asynchronous=False)
        listed = self.admin().list_consumer_groups(request_timeout=15).result(timeout=20)
        ids = [g.group_id for g in listed.valid]
        self.data["groups"] = ids
        if group not in ids:
            raise fail(f"list groups lacks {group}: {ids} (errors: {listed.errors})")
        d = self.admin().describe_consumer_groups([group], request_timeout=15)[group].result(timeout=20)
        self.data.update(state=str(d.state), members=len(d.members))
        if not d.members:
            raise fail(f"describe shows state {d.state} with no members")
        return f"listed; state {d.state}, {len(d.members)} member(s)"

    def s_describe_configs(self):
        self.ensure_topic(1)
        res = ConfigResource("topic", self.topic)
        cfgs = self.admin().describe_configs([res], request_timeout=15)[res].result(timeout=20)
        found = {k: cfgs[k].value for k in ("cleanup.policy", "retention.ms", "max.message.bytes") if k in cfgs}
        self.data.update(configs=found, count=len(cfgs))
        if "cleanup.policy" not in found and "retention.ms" not in found:
            raise fail(f"neither cleanup.policy nor retention.ms in {len(cfgs)} configs")
        return f"{len(cfgs)} configs, {found}"

    def s_create_partitions(self):
        self.ensure_topic(1)
        self.admin().create_partitions([NewPartitions(self.topic, 3)], operation_timeout=15)[self.topic].result(timeout=20)
        self.data["partitions"] = self.wait_partitions(3)
        return f"1 -> {self.data['partitions']} partitions"

    def s_delete_topic(self):
        self.ensure_topic(1)
        self.admin().delete_topics([self.topic], operation_timeout=15)[self.topic].result(timeout=20)
        end = time.monotonic() + self.dl.remaining(30)
        while time.monotonic() < end:
            if self.topic not in self.admin().list_topics(timeout=10).topics:
                return "deleted and gone from metadata"
            time.sleep(0.25)
        raise fail("topic still listed 30 s after delete")

    def s_max_message_size(self):
        self.ensure_topic(1)
        # librdkafka checks message.max.bytes itself; raise it so the big record reaches the broker.
        p = self.producer(**{"message.max.bytes": 4_000_000, "compression.type": "none", "retries": 0,
                             "enable.idempotence": False})
        try:
            self.data["small_offset"] = self.produce_all(p, [dict(value=b"\0" * 1_000_000, partition=0)])[0]
        except KafkaException as e:
            self.data["small_error"] = err_name(e)
            raise fail(f"record with a 1,000,000-byte value rejected: {e}")
        try:
            off = self.produce_all(p, [dict(value=b"\0" * 1_100_000, partition=0)])[0]
        except KafkaException as e:
            k = kerr(e)
            self.data.update(error=err_name(e), errno=k.code() if k else None, exception=str(e))
            return f"under the limit accepted; over it rejected with {err_name(e)}"
        self.data["error"] = None
        raise fail(f"record with a 1,100,000-byte value accepted at offset {off}")

    # ------------------------------------------------------------ admin scenarios (2nd batch)
    def s_alter_configs(self):
        self.ensure_topic(1)
        res = ConfigResource(ResourceType.TOPIC, self.topic, incremental_configs=[
            ConfigEntry("retention.ms", ALTER_RETENTION_MS, incremental_operation=AlterConfigOpType.SET)])
        self.admin().incremental_alter_configs([res], request_timeout=15)[res].result(timeout=20)
        # Kafka applies the alter through its metadata log: poll the describe for up to 10 s.
        end = time.monotonic() + self.dl.remaining(10)
        while True:
            dres = ConfigResource(ResourceType.TOPIC, self.topic)
            e = self.admin().describe_configs([dres], request_timeout=15)[dres].result(timeout=20).get("retention.ms")
            if e is None:
                raise fail("describe_configs after the alter has no retention.ms")
            src_enum = e.source if isinstance(e.source, ConfigSource) else ConfigSource(e.source)
            ok = e.value == ALTER_RETENTION_MS and src_enum == ConfigSource.DYNAMIC_TOPIC_CONFIG
            if ok or time.monotonic() > end:
                break
            time.sleep(0.2)
        src = src_enum.name
        self.data.update(value=e.value, source=src)
        if not ok:
            raise fail(f"after incremental_alter_configs SET retention.ms={ALTER_RETENTION_MS} describe_configs shows {e.value} "
                       f"(source {src}), want {ALTER_RETENTION_MS} (DYNAMIC_TOPIC_CONFIG)")
        return f"incremental_alter_configs SET retention.ms={ALTER_RETENTION_MS}; describe_configs: {e.value}, source {src}"

    def s_describe_topic(self):
        self.ensure_topic(3)
        d = self.admin().describe_topics(TopicCollection([self.topic]), request_timeout=15)[self.topic].result(timeout=20)
        parts = []
        for p in d.partitions:
            lid = p.leader.id if p.leader is not None else -1
            check_replicas(p.id, lid, [r.id for r in p.replicas], [r.id for r in p.isr], self.rf)
            parts.append(f"p{p.id} leader/replicas/isr {lid}")
        self.data.update(partitions=len(parts), topic_id=str(d.topic_id))
        if len(parts) != 3:
            raise fail(f"{len(parts)} partitions, want 3")
        return f"describe_topics: topic ID {d.topic_id}; " + ", ".join(parts)

    def s_log_dirs(self):
        raise skip("confluent-kafka-python's AdminClient has no DescribeLogDirs")

    def s_delete_records(self):
        self.ensure_topic(1)
        self.produce_all(self.producer(), [dict(key=f"k{i}".encode(), value=f"r{i}".encode(), partition=0)
                                           for i in range(DELETE_RECORDS_PRODUCE)])
        before = DELETE_RECORDS_BEFORE
        tp = TopicPartition(self.topic, 0, before)
        fs = self.admin().delete_records([tp], request_timeout=15)
        lw = list(fs.values())[0].result(timeout=20).low_watermark
        tp0 = TopicPartition(self.topic, 0)
        earliest = self.admin().list_offsets({tp0: OffsetSpec.earliest()}, request_timeout=15)[tp0].result(timeout=20).offset
        self.data.update(low_watermark=lw, earliest=earliest)
        if (lw, earliest) != (before, before):
            raise fail(f"delete_records before {before}: low watermark {lw}, earliest offset {earliest} (want {before}, {before})")
        return f"delete_records before {before}: low watermark {before}; earliest offset {before}"

    def s_consumer_groups_cli(self):
        raise skip("kafka-cli only: checks the kafka-consumer-groups tool's output")

    def s_group_consumer_protocol(self):
        group = group_name(self.topic, self.args)
        self.ensure_topic(1)
        self.produce_all(self.producer(), [dict(key=f"k{i}".encode(), value=f"v{i}".encode(), partition=0) for i in range(20)])
        # group.protocol=consumer (KIP-848); the classic-only settings (session.timeout.ms, ...) stay unset.
        c = self.consumer(**{"group.id": group, "group.protocol": "consumer"})
        c.subscribe([self.topic])
        got = self.group_consume(c, 10, 20)
        if len(got) < 10:
            raise fail(f"first consumer (group.protocol=consumer) got {len(got)} of 10 records" + self.group_hint())
        c.commit(offsets=[TopicPartition(self.topic, 0, 10)], asynchronous=False)
        listed = self.admin().list_consumer_groups(request_timeout=15).result(timeout=20)
        gtype = next((str(getattr(g, "type", None)) for g in listed.valid if g.group_id == group), "(not listed)")
        c.close()
        self.data["group_type"] = gtype
        if gtype != str(ConsumerGroupType.CONSUMER):
            raise fail(f"list_consumer_groups reports group type {gtype}, want {ConsumerGroupType.CONSUMER}")
        c2 = self.consumer(**{"group.id": group, "group.protocol": "consumer"})
        c2.subscribe([self.topic])
        got = self.group_consume(c2, 1, 20)
        first = got[0].offset() if got else None
        self.data["resumed_at"] = first
        if first != 10:
            raise fail(f"second consumer (group.protocol=consumer) resumed at offset {first}, want 10" + self.group_hint())
        return f"group.protocol=consumer (group type {gtype}): committed 10, resumed at 10"

    def s_cross_produce(self):
        self.ensure_topic(1)
        p = self.producer(**{"compression.type": "none", "enable.idempotence": True})
        self.produce_all(p, [dict(key=k.encode(), value=v.encode(), partition=0,
                                  headers=[(CROSS_HEADER, CLIENT.encode())]) for k, v in CROSS])
        self.data["produced"] = len(CROSS)
        return f"{len(CROSS)} CROSS records produced"

    def s_cross_consume(self):
        got = self.read_all(self.consumer(), 1, len(CROSS))
        recs = [{"offset": m.offset(), "key": None if m.key() is None else m.key().decode(),
                 "value": None if m.value() is None else m.value().decode(),
                 "headers": [[k, bytes(v).decode()] for k, v in (m.headers() or [])]} for m in got]
        self.data["records"] = recs
        return check_cross(recs, self.args.get("expect_from"))


    # ------------------------------------------------------------ secure columns
    def _auth(self, in_group=False):
        """Produce the auth records and consume them back, from partition 0 or (acl_allowed) in the group."""
        try:
            self.produce_all(self.producer(), [{"key": k.encode(), "value": v.encode(), "partition": 0} for k, v in AUTH_RECORDS])
        except Exception as e:
            raise fail(f"{how(self.args)}: produce: {e}")
        if in_group:
            c = self.consumer(**{"group.id": group_name(self.topic, self.args), "session.timeout.ms": 10000})
            c.subscribe([self.topic])
            msgs = self.group_consume(c, len(AUTH_RECORDS), 20)
        else:
            msgs = self.read_all(self.consumer(), 1, len(AUTH_RECORDS), cap=20.0)
        return check_auth(self.args, [(m.key().decode(), m.value().decode()) for m in msgs])

    s_auth_plain = s_auth_scram_sha_256 = s_auth_scram_sha_512 = s_auth_mtls = _auth

    def s_acl_allowed(self):
        return self._auth(in_group=True)

    def _refused(self, scenario):
        """librdkafka retries the connection by itself and reports each failure to error_cb: the first one
        that names the failure (_ALL_BROKERS_DOWN only if none does within 3 s of it)."""
        errors = []
        p = self.producer(error_cb=errors.append)
        end = time.monotonic() + REFUSAL_BOUND_S
        while time.monotonic() < end and all(e.code() == KafkaError._ALL_BROKERS_DOWN for e in errors):
            if len(errors) == 1:
                end = min(end, time.monotonic() + 3)
            p.poll(0.2)
        named = [e for e in errors if e.code() != KafkaError._ALL_BROKERS_DOWN] or errors
        return refused(scenario, self.data, str(named[0]) if named else f"hung: no error within {REFUSAL_BOUND_S}s")

    def s_auth_bad_password(self):
        return self._refused("auth_bad_password")

    def s_auth_no_tls(self):
        return self._refused("auth_no_tls")

    def s_acl_denied(self):
        """Producing the auth records as a user without ACLs: the delivery reports' first error."""
        p = self.producer(**{"message.timeout.ms": (REFUSAL_BOUND_S - 5) * 1000})
        try:
            self.produce_all(p, [{"key": k.encode(), "value": v.encode(), "partition": 0} for k, v in AUTH_RECORDS])
            err = None
        except Exception as e:
            err = str(e)
        return refused("acl_denied", self.data, err)

    s_acl_deny_wins = s_acl_denied

    def s_acl_group_denied(self):
        """Consuming in the scenario's group as a user who may read the topic but not the group: librdkafka's first
        error, a consumed message's or error_cb's."""
        errors = []
        c = self.consumer(**{"group.id": group_name(self.topic, self.args), "error_cb": errors.append})
        c.subscribe([self.topic])
        end = time.monotonic() + REFUSAL_BOUND_S
        while time.monotonic() < end and not errors:
            for m in c.consume(num_messages=1, timeout=0.2):
                errors.append(m.error())
        err = str(errors[0]) if errors else f"hung: no error within {REFUSAL_BOUND_S}s"
        return group_refused(self.topic, self.data, err)


if __name__ == "__main__":
    main(Runner)
