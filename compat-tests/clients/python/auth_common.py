"""The secure columns for the Python runners: the security arguments (clients/RUNNERS.md) as each client's
configuration, and the checks of the auth_* scenarios."""
from runner_common import DATA, fail

AUTH = DATA["auth"]
AUTH_RECORDS = [(f"{AUTH['key_prefix']}{i}", f"{AUTH['value_prefix']}{i}") for i in range(AUTH["records"])]
REFUSAL_BOUND_S = AUTH["refusal_bound_s"]


def protocol(args):
    return args.get("security.protocol", "PLAINTEXT").upper()


def how(args):
    p = protocol(args)
    if p.startswith("SASL_"):
        return f"{args.get('sasl.mechanism')} over {p} as {args.get('sasl.username')}"
    return f"{p} with a client certificate" if "ssl.certificate.location" in args else p


def librdkafka_config(args):
    """The security arguments as librdkafka's configuration (confluent-kafka-python)."""
    p = protocol(args)
    c = {"security.protocol": p.lower()}
    if p.startswith("SASL_"):
        c.update({"sasl.mechanisms": args.get("sasl.mechanism", ""), "sasl.username": args.get("sasl.username", ""),
                  "sasl.password": args.get("sasl.password", "")})
    if p in ("SSL", "SASL_SSL"):
        for k in ("ssl.ca.location", "ssl.certificate.location", "ssl.key.location"):
            if k in args:
                c[k] = args[k]
    return c


def kafka_python_config(args):
    """The security arguments as kafka-python's keyword arguments."""
    p = protocol(args)
    c = {"security_protocol": p}
    if p.startswith("SASL_"):
        c.update(sasl_mechanism=args.get("sasl.mechanism", "").upper(), sasl_plain_username=args.get("sasl.username", ""),
                 sasl_plain_password=args.get("sasl.password", ""))
    if p in ("SSL", "SASL_SSL"):
        for k, kw in (("ssl.ca.location", "ssl_cafile"), ("ssl.certificate.location", "ssl_certfile"), ("ssl.key.location", "ssl_keyfile")):
            if k in args:
                c[kw] = args[k]
    return c


def check_auth(args, got):
    """got: list of (key, value) consumed from partition 0, in order."""
    if got != AUTH_RECORDS:
        raise fail(f"{how(args)}: consumed {got}, want {AUTH_RECORDS}")
    return f"{how(args)}: produced and consumed {len(got)} records"


def refused(scenario, data, err):
    """err: the client's error text, or None when it was served (hung is an error text starting 'hung')."""
    if err is None:
        raise fail("the client was served")
    data["error"] = err
    if err.startswith("hung"):
        raise fail(err)
    if scenario == "auth_bad_password" and "authentication" not in err.lower():
        raise fail(f"failed, but not with an authentication error: {err}")
    if scenario in ("acl_denied", "acl_deny_wins") and "authoriz" not in err.lower():
        raise fail(f"failed, but not with an authorization error: {err}")
    return f"refused: {err}"


def group_refused(topic, data, err):
    """acl_group_denied: err as refused's, which must be a group authorization error (the topic's name, which
    holds "group", taken out before looking)."""
    refused("acl_group_denied", data, err)
    low = err.replace(topic, "TOPIC").lower()
    if "authoriz" not in low or "group" not in low:
        raise fail(f"failed, but not with a group authorization error: {err}")
    return f"refused: {err}"
