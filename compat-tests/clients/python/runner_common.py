"""Shared plumbing of the Python compat-test runners (runner protocol, result line, scenario data)."""
import argparse
import json
import os
import sys
import time
import traceback

BUDGET_S = 45.0


class Outcome(Exception):
    """Ends a scenario early with result fail or skip."""

    def __init__(self, result, detail):
        super().__init__(detail)
        self.result = result


def fail(detail):
    return Outcome("fail", detail)


def skip(detail):
    return Outcome("skip", detail)


# The scenario data every runner (Go, Python, kafkajs, Java) reads: compat-tests/scenarios/scenarios.json.
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scenarios", "scenarios.json"),
          encoding="utf-8") as _f:
    DATA = json.load(_f)

PRODUCE_SET = [(r["key"], r["value"]) for r in DATA["produce_consume"]["records"]]
HEADERS = [(h["key"], bytes.fromhex(h["value_hex"])) for h in DATA["headers"]["headers"]]
HEADERS_RECORDS = DATA["headers"]["records"]
CODECS = DATA["codecs"]
BASE_TS = DATA["list_offsets"]["base_timestamp_ms"]
TS_STEP = DATA["list_offsets"]["step_ms"]
LIST_OFFSETS_RECORDS = DATA["list_offsets"]["records"]
ALTER_RETENTION_MS = DATA["alter_configs"]["retention_ms"]
DYNAMIC_TOPIC_CONFIG = DATA["alter_configs"]["source"]
DELETE_RECORDS_PRODUCE = DATA["delete_records"]["produce"]
DELETE_RECORDS_BEFORE = DATA["delete_records"]["before"]
LOG_DIRS_PRODUCE = DATA["log_dirs"]["produce"]
CROSS_HEADER = DATA["cross"]["header"]
CROSS = [(r["key"], r["value"]) for r in DATA["cross"]["records"]]


def headers_key(i):
    return f"{DATA['headers']['key_prefix']}{i}"


def headers_value(i):
    return f"{DATA['headers']['value_prefix']}{i}"


def group_name(topic, args):
    """The consumer group of a group scenario: --arg group=, else the data's name for the topic."""
    return args.get("group", DATA["group"].replace("{topic}", topic))


def wait_ready(topic, n, dl, metadata, served):
    """Polls every 200 ms, for up to 20 s of the runner's budget, until the topic is ready: metadata() shows
    exactly n partitions, each led by a broker the same answer lists, and then served() returns, a ListOffsets of
    every partition that its leader answers only once it holds the partition (Kafka publishes Metadata before its
    replica manager has created the partitions). metadata() returns (broker IDs or None when the call does not
    list them, [leader of partition 0, 1, ...] with -1 for none); an exception of either means not yet.
    Returns n; raises fail() with the last state seen."""
    end = time.monotonic() + dl.remaining(20)
    last = "no answer"
    while True:
        try:
            brokers, leaders = metadata()
            last = _not_ready(brokers, leaders, n)
            if not last:
                served()
                return n
        except Exception as e:  # e.g. UNKNOWN_TOPIC_OR_PARTITION or NOT_LEADER_OR_FOLLOWER right after the create
            last = err_text(e)
        if time.monotonic() >= end:
            raise fail(f"topic {topic} never had {n} partitions with a leader serving them: {last}")
        time.sleep(0.2)


def _not_ready(brokers, leaders, n):
    if len(leaders) != n:
        return f"{len(leaders)} partitions"
    for p, leader in enumerate(leaders):
        if leader is None or leader < 0:
            return f"partition {p} has no leader"
        if brokers is not None and leader not in brokers:
            return f"partition {p}: leader {leader} is not among the brokers {sorted(brokers)}"
    return ""


def check_replicas(partition, leader, replicas, isr, rf):
    """describe_topic's check of one partition of a topic created with replication factor rf: rf distinct
    replicas, the leader among them, the ISR the same set. Raises fail()."""
    ok = (leader is not None and leader >= 0 and len(replicas) == rf and len(set(replicas)) == rf
          and leader in replicas and len(isr) == rf and set(isr) == set(replicas))
    if not ok:
        raise fail(f"partition {partition}: leader {leader} replicas {replicas} isr {isr} "
                   f"(want {rf} replicas, the leader among them, ISR = replicas)")


def err_text(e):
    s = f"{type(e).__module__}.{type(e).__name__}: {e}"
    c = e.__cause__ or e.__context__
    if c is not None and c is not e and not isinstance(e, Outcome):
        s += f" (caused by {type(c).__name__}: {c})"
    return s


def check_produce_consume(records, codec):
    """records: list of (partition, offset, key str|None, value str) against PRODUCE_SET: each value once
    with its key, per key in produce order, per partition offsets increasing. Raises fail() on a mismatch."""
    if len(records) != len(PRODUCE_SET):
        raise fail(f"consumed {len(records)} records, want {len(PRODUCE_SET)}")
    key_of = {v: k for k, v in PRODUCE_SET}
    index_of = {v: i for i, (_, v) in enumerate(PRODUCE_SET)}
    values, last_off, last_idx = set(), {}, {}
    for part, off, k, v in records:
        if v in values:
            raise fail(f"duplicate value {v}")
        values.add(v)
        if v not in key_of:
            raise fail(f"unexpected value {v}")
        if k != key_of[v]:
            raise fail(f"record {v} has key {k}")
        if k is not None:
            i = index_of[v]
            if k in last_idx and last_idx[k] >= i:
                raise fail(f"key {k}: {v} after {PRODUCE_SET[last_idx[k]][1]}")
            last_idx[k] = i
        if part in last_off and last_off[part] >= off:
            raise fail(f"partition {part}: offset {off} after {last_off[part]}")
        last_off[part] = off
    return f"{len(records)} records ({codec}) consumed intact over {len(last_off)} partition(s)", len(last_off)


def check_cross(recs, expect_from):
    """recs: list of {"offset","key","value","headers"} dicts."""
    if len(recs) != len(CROSS):
        raise fail(f"read {len(recs)} records, want {len(CROSS)}")
    for i, r in enumerate(recs):
        ok = (r["offset"] == i and r["key"] == CROSS[i][0] and r["value"] == CROSS[i][1]
              and len(r["headers"]) == 1 and r["headers"][0][0] == CROSS_HEADER
              and (not expect_from or r["headers"][0][1] == expect_from))
        if not ok:
            raise fail(f"record {i} differs from the CROSS set: {r}")
    return f"{len(CROSS)} CROSS records read" + (f" from {expect_from}" if expect_from else "")


def main(runner_cls):
    p = argparse.ArgumentParser()
    p.add_argument("--bootstrap")
    p.add_argument("--scenario")
    p.add_argument("--topic")
    p.add_argument("--replication-factor", type=int, default=1, dest="rf")
    p.add_argument("--arg", action="append", default=[])
    a, _ = p.parse_known_args()
    out = {"result": "fail", "detail": "", "data": {}}
    if not (a.bootstrap and a.scenario and a.topic):
        out["detail"] = "usage: --bootstrap HOST:PORT --scenario NAME --topic TOPIC [--replication-factor N] [--arg K=V ...]"
    else:
        args = dict(x.split("=", 1) for x in a.arg if "=" in x)
        r = runner_cls(a.bootstrap, a.topic, args, a.rf)
        out["data"] = r.data
        try:
            fn = getattr(r, "s_" + a.scenario, None)
            if fn is None:
                raise skip(f"unknown scenario {a.scenario}")
            out["detail"] = fn()
            out["result"] = "pass"
        except Outcome as o:
            out["result"], out["detail"] = o.result, str(o)
        except Exception as e:  # a client error is a failed scenario, not a crash
            out["result"], out["detail"] = "fail", err_text(e)
            traceback.print_exc(file=sys.stderr)
        try:
            r.close()
        except Exception:
            pass
    sys.stderr.flush()
    # ensure_ascii keeps the line intact under any locale.
    sys.stdout.write("\n" + json.dumps(out, ensure_ascii=True, default=str) + "\n")
    sys.stdout.flush()
    os._exit(0)


class Deadline:
    def __init__(self):
        self.end = time.monotonic() + BUDGET_S

    def remaining(self, cap):
        return max(0.0, min(cap, self.end - time.monotonic()))
