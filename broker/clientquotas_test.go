package broker

import (
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
)

type quotaOp struct {
	key    string
	value  float64
	remove bool
}

// alterQuotas sends one AlterClientQuotas entry per entity (type, name
// pairs; a nil name is the default) and returns each entry's code and
// message.
func alterQuotas(t *testing.T, b *Broker, validateOnly bool, entities [][]kmsg.AlterClientQuotasRequestEntryEntity, ops ...quotaOp) []kmsg.AlterClientQuotasResponseEntry {
	t.Helper()
	r := kmsg.NewPtrAlterClientQuotasRequest()
	r.ValidateOnly = validateOnly
	for _, e := range entities {
		entry := kmsg.AlterClientQuotasRequestEntry{Entity: e}
		for _, op := range ops {
			entry.Ops = append(entry.Ops, kmsg.AlterClientQuotasRequestEntryOp{Key: op.key, Value: op.value, Remove: op.remove})
		}
		r.Entries = append(r.Entries, entry)
	}
	return adminRoundTrip[*kmsg.AlterClientQuotasResponse](t, b, r, 1).Entries
}

func quotaEntity(pairs ...*string) []kmsg.AlterClientQuotasRequestEntryEntity {
	var out []kmsg.AlterClientQuotasRequestEntryEntity
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, kmsg.AlterClientQuotasRequestEntryEntity{Type: *pairs[i], Name: pairs[i+1]})
	}
	return out
}

// describeQuotas answers a DescribeClientQuotas filter as entity
// "type=name" strings (name "<default>" for the default) to key=value.
func describeQuotas(t *testing.T, b *Broker, strict bool, components ...kmsg.DescribeClientQuotasRequestComponent) (map[string]map[string]float64, *kmsg.DescribeClientQuotasResponse) {
	t.Helper()
	r := kmsg.NewPtrDescribeClientQuotasRequest()
	r.Components, r.Strict = components, strict
	resp := adminRoundTrip[*kmsg.DescribeClientQuotasResponse](t, b, r, 1)
	out := map[string]map[string]float64{}
	for _, e := range resp.Entries {
		name := ""
		for _, p := range e.Entity {
			n := "<default>"
			if p.Name != nil {
				n = *p.Name
			}
			name += p.Type + "=" + n + ";"
		}
		out[name] = map[string]float64{}
		for _, v := range e.Values {
			out[name][v.Key] = v.Value
		}
	}
	return out, resp
}

// TestClientQuotasAlterAndDescribe checks AlterClientQuotas sets and
// removes quotas of users, client ids, both, their defaults and IPs,
// refuses with Kafka's messages what Kafka's controller refuses, changes
// nothing when validate-only, and DescribeClientQuotas' exact, default
// and any-name filters, strict or not, and the quotas after a restart.
func TestClientQuotasAlterAndDescribe(t *testing.T) {
	dir := t.TempDir()
	logger := zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))
	cfgDir := func(c *Config) { c.LogDirs = dir }
	b, stop := startStoppable(t, cfgDir, logger)
	s := kmsg.StringPtr
	user, client, ip := s("user"), s("client-id"), s("ip")
	ok := func(what string, entries []kmsg.AlterClientQuotasResponseEntry) {
		t.Helper()
		for i, e := range entries {
			if e.ErrorCode != 0 {
				t.Fatalf("%s entry %d: %v %v", what, i, kerr.ErrorForCode(e.ErrorCode), e.ErrorMessage)
			}
		}
	}
	ok("set", alterQuotas(t, b, false, [][]kmsg.AlterClientQuotasRequestEntryEntity{
		quotaEntity(user, s("alice")), quotaEntity(user, s("alice"), client, nil), quotaEntity(client, nil), quotaEntity(user, nil, client, s("c1")),
	}, quotaOp{key: "producer_byte_rate", value: 1048576}, quotaOp{key: "request_percentage", value: 12.5}))
	ok("ip", alterQuotas(t, b, false, [][]kmsg.AlterClientQuotasRequestEntryEntity{quotaEntity(ip, nil), quotaEntity(ip, s("10.0.0.1"))},
		quotaOp{key: "connection_creation_rate", value: 10}))
	ok("validate only", alterQuotas(t, b, true, [][]kmsg.AlterClientQuotasRequestEntryEntity{quotaEntity(user, s("bob"))}, quotaOp{key: "consumer_byte_rate", value: 5}))
	ok("remove", alterQuotas(t, b, false, [][]kmsg.AlterClientQuotasRequestEntryEntity{quotaEntity(user, nil, client, s("c1"))},
		quotaOp{key: "producer_byte_rate", remove: true}, quotaOp{key: "consumer_byte_rate", remove: true}))

	for _, tc := range []struct {
		entity []kmsg.AlterClientQuotasRequestEntryEntity
		ops    []quotaOp
		msg    string
	}{
		{quotaEntity(user, s("alice")), []quotaOp{{key: "connection_creation_rate", value: 1}}, "Invalid configuration key connection_creation_rate"},
		{quotaEntity(ip, nil), []quotaOp{{key: "producer_byte_rate", value: 1}}, "Invalid configuration key producer_byte_rate"},
		{quotaEntity(user, s("alice")), []quotaOp{{key: "producer_byte_rate", value: 0}}, "Quota producer_byte_rate must be greater than 0"},
		{quotaEntity(user, s("alice")), []quotaOp{{key: "producer_byte_rate", value: 1.5}}, "producer_byte_rate cannot be a fractional value."},
		{quotaEntity(ip, nil), []quotaOp{{key: "connection_creation_rate", value: 3e9}}, "Proposed value for connection_creation_rate is too large for an INT."},
		{quotaEntity(ip, nil, user, s("a")), []quotaOp{{key: "connection_creation_rate", value: 1}}, "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"},
		{quotaEntity(s("group"), s("g")), []quotaOp{{key: "producer_byte_rate", value: 1}}, "Unhandled client quota entity type: group"},
		{quotaEntity(user, s("")), []quotaOp{{key: "producer_byte_rate", value: 1}}, "Empty user not supported"},
		{nil, []quotaOp{{key: "producer_byte_rate", value: 1}}, "Invalid empty client quota entity"},
		{quotaEntity(user, s("alice")), []quotaOp{{key: "producer_byte_rate", value: 1}, {key: "producer_byte_rate", value: 2}},
			"Duplicate quota key producer_byte_rate not updating quota for this entity ClientQuotaEntity(entries={user=alice})"},
	} {
		got := alterQuotas(t, b, false, [][]kmsg.AlterClientQuotasRequestEntryEntity{tc.entity}, tc.ops...)
		if got[0].ErrorCode != kerr.InvalidRequest.Code || got[0].ErrorMessage == nil || *got[0].ErrorMessage != tc.msg {
			t.Errorf("%v %v: %v %v, want INVALID_REQUEST %q", tc.entity, tc.ops, kerr.ErrorForCode(got[0].ErrorCode), got[0].ErrorMessage, tc.msg)
		}
	}

	both := map[string]float64{"producer_byte_rate": 1048576, "request_percentage": 12.5}
	all := map[string]map[string]float64{
		"user=alice;":                     both,
		"client-id=<default>;user=alice;": both,
		"client-id=<default>;":            both,
		"client-id=c1;user=<default>;":    {"request_percentage": 12.5},
		"ip=<default>;":                   {"connection_creation_rate": 10},
		"ip=10.0.0.1;":                    {"connection_creation_rate": 10},
	}
	pick := func(names ...string) map[string]map[string]float64 {
		out := map[string]map[string]float64{}
		for _, n := range names {
			out[n] = all[n]
		}
		return out
	}
	exact := func(typ, name string) kmsg.DescribeClientQuotasRequestComponent {
		return kmsg.DescribeClientQuotasRequestComponent{EntityType: typ, MatchType: 0, Match: s(name)}
	}
	def := func(typ string) kmsg.DescribeClientQuotasRequestComponent {
		return kmsg.DescribeClientQuotasRequestComponent{EntityType: typ, MatchType: 1}
	}
	anyName := func(typ string) kmsg.DescribeClientQuotasRequestComponent {
		return kmsg.DescribeClientQuotasRequestComponent{EntityType: typ, MatchType: 2}
	}
	check := func(b *Broker) {
		t.Helper()
		for _, tc := range []struct {
			name       string
			strict     bool
			components []kmsg.DescribeClientQuotasRequestComponent
			want       map[string]map[string]float64
		}{
			{"everything", false, nil, all},
			{"user alice", false, []kmsg.DescribeClientQuotasRequestComponent{exact("user", "alice")}, pick("user=alice;", "client-id=<default>;user=alice;")},
			{"user alice strict", true, []kmsg.DescribeClientQuotasRequestComponent{exact("user", "alice")}, pick("user=alice;")},
			{"default client", false, []kmsg.DescribeClientQuotasRequestComponent{def("client-id")}, pick("client-id=<default>;", "client-id=<default>;user=alice;")},
			{"any user and any client", false, []kmsg.DescribeClientQuotasRequestComponent{anyName("user"), anyName("client-id")},
				pick("client-id=<default>;user=alice;", "client-id=c1;user=<default>;")},
			{"any ip", true, []kmsg.DescribeClientQuotasRequestComponent{anyName("ip")}, pick("ip=<default>;", "ip=10.0.0.1;")},
		} {
			got, resp := describeQuotas(t, b, tc.strict, tc.components...)
			if resp.ErrorCode != 0 || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("describe %s: %v %v, want %v", tc.name, kerr.ErrorForCode(resp.ErrorCode), got, tc.want)
			}
		}
	}
	check(b)
	for _, tc := range []struct {
		components []kmsg.DescribeClientQuotasRequestComponent
		code       *kerr.Error
		msg        string
	}{
		{[]kmsg.DescribeClientQuotasRequestComponent{anyName("ip"), exact("user", "a")}, kerr.InvalidRequest,
			"Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component."},
		{[]kmsg.DescribeClientQuotasRequestComponent{anyName("user"), def("user")}, kerr.InvalidRequest, "Entity type user cannot appear more than once in the filter."},
		{[]kmsg.DescribeClientQuotasRequestComponent{anyName("group")}, kerr.UnsupportedVersion, "Unsupported entity type group"},
		{[]kmsg.DescribeClientQuotasRequestComponent{{EntityType: "user", MatchType: 0}}, kerr.InvalidRequest, "Request specified MATCH_TYPE_EXACT, but set match string to null."},
	} {
		_, resp := describeQuotas(t, b, false, tc.components...)
		if resp.ErrorCode != tc.code.Code || resp.ErrorMessage == nil || *resp.ErrorMessage != tc.msg || resp.Entries != nil {
			t.Errorf("describe %v: %v %v (%d entries), want %v %q", tc.components, kerr.ErrorForCode(resp.ErrorCode), resp.ErrorMessage, len(resp.Entries), tc.code, tc.msg)
		}
	}
	stop()
	b, _ = startStoppable(t, cfgDir, logger)
	check(b)
}
