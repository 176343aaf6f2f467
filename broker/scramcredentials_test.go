package broker

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/strata-io/strata/metadata"
)

// TestScramCredentialsThroughAdmin: a credential kadm upserts (salted
// client-side) authenticates its user over SCRAM and is described as its
// mechanism and iterations; deleting one mechanism ends its logins, the
// other goes on.
func TestScramCredentialsThroughAdmin(t *testing.T) {
	b := saslBroker(t, func(c *Config) {
		c.ListenerSASL["SASL"].Mechanisms = []string{MechanismScramSHA256, MechanismScramSHA512}
	})
	ctx := t.Context()
	adm := kadm.NewClient(newClient(t, b))
	altered, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: "bob", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "bob-secret"},
		{User: "carol", Mechanism: kadm.ScramSha512, Iterations: 16384, Password: "carol-secret"},
	})
	if err != nil || altered.Error() != nil {
		t.Fatalf("upsert: %v %v", err, altered.Error())
	}
	altered, err = adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "bob", Mechanism: kadm.ScramSha512, Iterations: 8192, Password: "bob-secret"}})
	if err != nil || altered.Error() != nil {
		t.Fatalf("upsert bob's second mechanism: %v %v", err, altered.Error())
	}
	described, err := adm.DescribeUserSCRAMs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := describedString(described); got != "bob:SCRAM-SHA-256/4096,SCRAM-SHA-512/8192 carol:SCRAM-SHA-512/16384" {
		t.Errorf("described %s", got)
	}
	login := func(user, pass string, sha512 bool) error {
		a := scram.Auth{User: user, Pass: pass}
		mech := a.AsSha256Mechanism()
		if sha512 {
			mech = a.AsSha512Mechanism()
		}
		cl := scramClient(t, b, mech, kgo.RequestRetries(0))
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		return cl.Ping(ctx)
	}
	for _, tc := range []struct {
		user, pass string
		sha512, ok bool
	}{{"bob", "bob-secret", false, true}, {"bob", "bob-secret", true, true}, {"carol", "carol-secret", true, true},
		{"carol", "carol-secret", false, false}, {"bob", "carol-secret", false, false}} {
		if err := login(tc.user, tc.pass, tc.sha512); (err == nil) != tc.ok {
			t.Errorf("%s/%s sha512=%v: login error %v, want success %v", tc.user, tc.pass, tc.sha512, err, tc.ok)
		}
	}
	altered, err = adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "bob", Mechanism: kadm.ScramSha256}}, nil)
	if err != nil || altered.Error() != nil {
		t.Fatalf("delete: %v %v", err, altered.Error())
	}
	if err := login("bob", "bob-secret", false); err == nil {
		t.Error("bob logs in with SCRAM-SHA-256 after its deletion")
	}
	if err := login("bob", "bob-secret", true); err != nil {
		t.Errorf("bob with SCRAM-SHA-512 after SCRAM-SHA-256's deletion: %v", err)
	}
}

func describedString(d kadm.DescribedUserSCRAMs) string {
	var users []string
	for _, u := range d.Sorted() {
		var infos []string
		for _, c := range u.CredInfos {
			infos = append(infos, fmt.Sprintf("%s/%d", c.Mechanism, c.Iterations))
		}
		users = append(users, u.User+":"+strings.Join(infos, ","))
	}
	return strings.Join(users, " ")
}

// TestAlterUserScramCredentialsValidation: each refusal of Kafka's
// ScramControlManager, with its code and message, the others' changes
// made in the same request.
func TestAlterUserScramCredentialsValidation(t *testing.T) {
	b := startBroker(t, nil)
	if _, err := b.meta.Propose(scramRecord(t, MechanismScramSHA256, "alice", "alice-secret", 4096), scramRecord(t, MechanismScramSHA256, "twice", "x", 4096),
		scramRecord(t, MechanismScramSHA512, "twice", "x", 4096), scramRecord(t, MechanismScramSHA256, "both", "x", 4096)); err != nil {
		t.Fatal(err)
	}
	salted := make([]byte, 32)
	up := func(user string, mech int8, iterations int32) kmsg.AlterUserSCRAMCredentialsRequestUpsertion {
		u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
		u.Name, u.Mechanism, u.Iterations, u.Salt, u.SaltedPassword = user, mech, iterations, []byte("salt"), salted
		return u
	}
	del := func(user string, mech int8) kmsg.AlterUserSCRAMCredentialsRequestDeletion {
		d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
		d.Name, d.Mechanism = user, mech
		return d
	}
	noSalted := up("nosalted", 1, 4096)
	noSalted.SaltedPassword = nil
	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	req.Deletions = []kmsg.AlterUserSCRAMCredentialsRequestDeletion{
		del("alice", 1), del("ghost", 1), del("", 1), del("twice", 1), del("twice", 2), del("badmech", 3), del("both", 1),
	}
	req.Upsertions = []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{
		up("new", 2, 4096), up("few", 1, 4095), up("many", 1, 16385), up("", 2, 8192), up("unknown", 0, 4096),
		up("both", 2, 4096), up("dup", 1, 4096), up("dup", 2, 4096), up("max", 1, 16384), noSalted,
	}
	resp := adminRoundTrip[*kmsg.AlterUserSCRAMCredentialsResponse](t, b, req, 0)
	got := map[string]string{}
	for _, r := range resp.Results {
		if _, twice := got[r.User]; twice {
			t.Errorf("user %q answered twice", r.User)
		}
		got[r.User] = fmt.Sprintf("%v %s", kerr.ErrorForCode(r.ErrorCode), derefOr(r.ErrorMessage))
	}
	const dup = "DUPLICATE_RESOURCE: A request illegally referred to the same resource twice. A user credential cannot be altered twice in the same request"
	want := map[string]string{
		"alice":    "<nil> <nil>",
		"new":      "<nil> <nil>",
		"max":      "<nil> <nil>",
		"ghost":    "RESOURCE_NOT_FOUND: A request illegally referred to a resource that does not exist. Attempt to delete a user credential that does not exist",
		"":         "UNACCEPTABLE_CREDENTIAL: Requested credential would not meet criteria for acceptability. Username must not be empty",
		"twice":    dup,
		"both":     dup,
		"dup":      dup,
		"badmech":  "UNSUPPORTED_SASL_MECHANISM: The broker does not support the requested SASL mechanism. Unknown SCRAM mechanism",
		"unknown":  "UNSUPPORTED_SASL_MECHANISM: The broker does not support the requested SASL mechanism. Unknown SCRAM mechanism",
		"few":      "UNACCEPTABLE_CREDENTIAL: Requested credential would not meet criteria for acceptability. Too few iterations",
		"many":     "UNACCEPTABLE_CREDENTIAL: Requested credential would not meet criteria for acceptability. Too many iterations",
		"nosalted": "UNKNOWN_SERVER_ERROR: The server experienced an unexpected error when processing the request. The server experienced an unexpected error when processing the request.",
	}
	for user, w := range want {
		if got[user] != w {
			t.Errorf("%q: %s\n want %s", user, got[user], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d users answered, want %d: %v", len(got), len(want), got)
	}
	wantUsers := []metadata.ScramUser{{Name: "both", Mechanism: 1}, {Name: "max", Mechanism: 1}, {Name: "new", Mechanism: 2},
		{Name: "twice", Mechanism: 1}, {Name: "twice", Mechanism: 2}}
	if users := b.meta.Image().Access.Scram.Users(); !slices.Equal(users, wantUsers) {
		t.Errorf("credentials after the request: %v, want %v", users, wantUsers)
	}
	c, _ := b.meta.Image().Access.Scram.Credential(metadata.ScramUser{Name: "new", Mechanism: 2})
	m, _ := scramMechanismNamed(MechanismScramSHA512)
	stored, server := m.credential(salted)
	if string(c.Salt) != "salt" || c.Iterations != 4096 || string(c.StoredKey) != string(stored) || string(c.ServerKey) != string(server) {
		t.Errorf("new's credential %+v: want the salt, the iterations and the keys of the salted password", c)
	}
}

// TestDescribeUserScramCredentials: every user when none is named, each
// named one once with RESOURCE_NOT_FOUND and DUPLICATE_RESOURCE as Kafka's
// ScramImage.describe answers.
func TestDescribeUserScramCredentials(t *testing.T) {
	b := startBroker(t, nil)
	if _, err := b.meta.Propose(scramRecord(t, MechanismScramSHA512, "alice", "x", 8192), scramRecord(t, MechanismScramSHA256, "alice", "x", 4096),
		scramRecord(t, MechanismScramSHA256, "bob", "x", 5000)); err != nil {
		t.Fatal(err)
	}
	describe := func(users ...string) string {
		req := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
		for _, u := range users {
			req.Users = append(req.Users, kmsg.DescribeUserSCRAMCredentialsRequestUser{Name: u})
		}
		resp := adminRoundTrip[*kmsg.DescribeUserSCRAMCredentialsResponse](t, b, req, 0)
		out := []string{fmt.Sprint(kerr.ErrorForCode(resp.ErrorCode))}
		for _, r := range resp.Results {
			s := r.User + ":"
			for _, c := range r.CredentialInfos {
				s += fmt.Sprintf("%d/%d,", c.Mechanism, c.Iterations)
			}
			if r.ErrorCode != 0 {
				s += kerr.ErrorForCode(r.ErrorCode).(*kerr.Error).Message + " " + derefOr(r.ErrorMessage)
			}
			out = append(out, s)
		}
		return strings.Join(out, " | ")
	}
	for _, tc := range []struct {
		users []string
		want  string
	}{
		{nil, "<nil> | alice:1/4096,2/8192, | bob:1/5000,"},
		{[]string{"bob"}, "<nil> | bob:1/5000,"},
		{[]string{"bob", "ghost", "alice", "bob"}, "<nil> | bob:DUPLICATE_RESOURCE Cannot describe SCRAM credentials for the same user twice in a single request: bob | " +
			"ghost:RESOURCE_NOT_FOUND Attempt to describe a user credential that does not exist: ghost | alice:1/4096,2/8192,"},
	} {
		if got := describe(tc.users...); got != tc.want {
			t.Errorf("describe %v:\n %s\n want %s", tc.users, got, tc.want)
		}
	}
}
