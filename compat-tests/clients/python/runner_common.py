"""Shared plumbing of the Python compat-test runners (runner protocol, result line, CROSS set)."""
import argparse
import json
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


def cross_value(i):
    return f"cross-value-{i}-" + "ż" * 50


HEADERS = [("h1", b"a"), ("h2", b"\x00\xff"), ("h1", b"b")]
CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


def err_text(e):
    s = f"{type(e).__module__}.{type(e).__name__}: {e}"
    c = e.__cause__ or e.__context__
    if c is not None and c is not e and not isinstance(e, Outcome):
        s += f" (caused by {type(c).__name__}: {c})"
    return s


def check_produce_consume(records, codec):
    """records: list of (partition, offset, key str|None, value str). Raises fail() on any mismatch."""
    if len(records) != 40:
        raise fail(f"consumed {len(records)} records, want 40")
    values, last_off, last_idx = set(), {}, {}
    for part, off, k, v in records:
        if v in values:
            raise fail(f"duplicate value {v}")
        values.add(v)
        if v.startswith("v"):
            i = int(v[1:])
            if i >= 30 or k != f"k{i % 5}":
                raise fail(f"record {v} has key {k}")
            if k in last_idx and last_idx[k] >= i:
                raise fail(f"key {k}: {v} after v{last_idx[k]}")
            last_idx[k] = i
        elif v.startswith("u"):
            if k is not None:
                raise fail(f"unkeyed record {v} has key {k}")
        else:
            raise fail(f"unexpected value {v}")
        if part in last_off and last_off[part] >= off:
            raise fail(f"partition {part}: offset {off} after {last_off[part]}")
        last_off[part] = off
    want = {f"v{i}" for i in range(30)} | {f"u{i}" for i in range(10)}
    if values != want:
        raise fail("values differ from the produced set")
    return f"40 records ({codec}) consumed intact over {len(last_off)} partition(s)", len(last_off)


def check_cross(recs, expect_from):
    """recs: list of {"offset","key","value","headers"} dicts."""
    if len(recs) != 20:
        raise fail(f"read {len(recs)} records, want 20")
    for i, r in enumerate(recs):
        ok = (r["offset"] == i and r["key"] == f"ck{i}" and r["value"] == cross_value(i)
              and len(r["headers"]) == 1 and r["headers"][0][0] == "src"
              and (not expect_from or r["headers"][0][1] == expect_from))
        if not ok:
            raise fail(f"record {i} differs from the CROSS set: {r}")
    return "20 CROSS records read" + (f" from {expect_from}" if expect_from else "")


def main(runner_cls):
    p = argparse.ArgumentParser()
    p.add_argument("--bootstrap")
    p.add_argument("--scenario")
    p.add_argument("--topic")
    p.add_argument("--arg", action="append", default=[])
    a, _ = p.parse_known_args()
    out = {"result": "fail", "detail": "", "data": {}}
    if not (a.bootstrap and a.scenario and a.topic):
        out["detail"] = "usage: --bootstrap HOST:PORT --scenario NAME --topic TOPIC [--arg K=V ...]"
    else:
        args = dict(x.split("=", 1) for x in a.arg if "=" in x)
        r = runner_cls(a.bootstrap, a.topic, args)
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
    import os
    os._exit(0)


class Deadline:
    def __init__(self):
        self.end = time.monotonic() + BUDGET_S

    def remaining(self, cap):
        return max(0.0, min(cap, self.end - time.monotonic()))
