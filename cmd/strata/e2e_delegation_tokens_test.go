package main

import (
	"encoding/base64"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// startTokenStrata starts strata with a PLAINTEXT listener, a SCRAM
// listener and delegation tokens enabled, and gives alice and bob SCRAM
// credentials.
func startTokenStrata(t *testing.T, dir string, extra ...string) (p *proc, plain, saslAddr string) {
	t.Helper()
	plain = "127.0.0.1:" + strconv.Itoa(freePort(t))
	saslAddr = "127.0.0.1:" + strconv.Itoa(freePort(t))
	p = launchTokenStrata(t, dir, plain, saslAddr, extra...)
	_, err := kadm.NewClient(newClient(t, plain)).AlterUserSCRAMs(timeoutCtx(t, 20*time.Second), nil, []kadm.UpsertSCRAM{
		{User: "alice", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "alice-secret"},
		{User: "bob", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "bob-secret"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return p, plain, saslAddr
}

func launchTokenStrata(t *testing.T, dir, plain, saslAddr string, extra ...string) *proc {
	t.Helper()
	args := []string{
		"--override", "listeners=PLAINTEXT://" + plain + ",SASL_PLAINTEXT://" + saslAddr,
		"--override", "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
		"--override", "log.dirs=" + dir,
		"--override", "delegation.token.secret.key=a-secret-every-node-shares",
	}
	for _, l := range append(scramLines, extra...) {
		args = append(args, "--override", l)
	}
	p := launchArgs(t, dir, plain, args...)
	p.waitReady(30 * time.Second)
	return p
}

func scramUser(user, password string) kgo.Opt {
	return kgo.SASL(scram.Auth{User: user, Pass: password}.AsSha256Mechanism())
}

// tokenLogin is the SCRAM login of a delegation token, as Kafka's clients
// make it: the token id as the user, the HMAC's base64 as the password,
// tokenauth=true.
func tokenLogin(id string, hmac []byte) kgo.Opt {
	return kgo.SASL(scram.Auth{User: id, Pass: base64.StdEncoding.EncodeToString(hmac), IsToken: true}.AsSha512Mechanism())
}

func createToken(t *testing.T, cl *kgo.Client, renewers ...string) *kmsg.CreateDelegationTokenResponse {
	t.Helper()
	req := kmsg.NewPtrCreateDelegationTokenRequest()
	for _, r := range renewers {
		rn := kmsg.NewCreateDelegationTokenRequestRenewer()
		rn.PrincipalType, rn.PrincipalName = "User", r
		req.Renewers = append(req.Renewers, rn)
	}
	resp, err := req.RequestWith(timeoutCtx(t, 20*time.Second), cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func describeTokens(t *testing.T, cl *kgo.Client) *kmsg.DescribeDelegationTokenResponse {
	t.Helper()
	resp, err := kmsg.NewPtrDescribeDelegationTokenRequest().RequestWith(timeoutCtx(t, 20*time.Second), cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestDelegationTokens drives the token lifecycle over TCP as Kafka serves
// it: refused on PLAINTEXT and to a token-authenticated client, created by
// a SCRAM user, used to log in (produce and consume as its owner),
// described only to its owner and renewers, renewed by a renewer and not by
// a stranger, kept across a restart, and expired, after which it no longer
// logs in.
func TestDelegationTokens(t *testing.T) {
	dir := t.TempDir()
	p, plain, saslAddr := startTokenStrata(t, dir)

	if got := createToken(t, newClient(t, plain)).ErrorCode; got != kerr.DelegationTokenRequestNotAllowed.Code {
		t.Fatalf("create over PLAINTEXT: %v, want DELEGATION_TOKEN_REQUEST_NOT_ALLOWED", kerr.ErrorForCode(got))
	}
	alice := newClient(t, saslAddr, scramUser("alice", "alice-secret"))
	created := createToken(t, alice, "bob")
	if created.ErrorCode != 0 || created.TokenID == "" || len(created.HMAC) != 64 {
		t.Fatalf("create: %v, id %q, %d-byte HMAC", kerr.ErrorForCode(created.ErrorCode), created.TokenID, len(created.HMAC))
	}
	if created.PrincipalName != "alice" || created.TokenRequesterPrincipalName != "alice" ||
		created.ExpiryTimestamp-created.IssueTimestamp != 86400000 || created.MaxTimestamp-created.IssueTimestamp != 604800000 {
		t.Fatalf("create answered %+v, want alice's, Kafka's default expiry and max lifetime", created)
	}

	// The token logs in as alice, and may not manage tokens itself.
	topic := "tokens"
	withToken := newClient(t, saslAddr, tokenLogin(created.TokenID, created.HMAC), kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic(topic))
	if err := withToken.ProduceSync(timeoutCtx(t, 20*time.Second), &kgo.Record{Value: []byte("by token")}).FirstErr(); err != nil {
		t.Fatalf("produce with the token: %v", err)
	}
	if got := describeTokens(t, withToken).ErrorCode; got != kerr.DelegationTokenRequestNotAllowed.Code {
		t.Fatalf("describe by a token-authenticated client: %v, want DELEGATION_TOKEN_REQUEST_NOT_ALLOWED", kerr.ErrorForCode(got))
	}
	if got := scramLogin(t, saslAddr, scram.Auth{User: created.TokenID, Pass: "wrong", IsToken: true}.AsSha512Mechanism()); got == "ok" {
		t.Fatal("a wrong HMAC logged in")
	}

	// Describe: alice and bob (a renewer) see it, with its HMAC; carol does not.
	d := describeTokens(t, alice)
	if d.ErrorCode != 0 || len(d.TokenDetails) != 1 || d.TokenDetails[0].TokenID != created.TokenID ||
		string(d.TokenDetails[0].HMAC) != string(created.HMAC) || len(d.TokenDetails[0].Renewers) != 1 || d.TokenDetails[0].Renewers[0].PrincipalName != "bob" {
		t.Fatalf("alice's describe: %+v", d)
	}
	bob := newClient(t, saslAddr, scramUser("bob", "bob-secret"))
	if d := describeTokens(t, bob); len(d.TokenDetails) != 1 {
		t.Fatalf("bob (a renewer) sees %d tokens, want 1", len(d.TokenDetails))
	}
	bobsOwn := createToken(t, bob)
	// Without an authorizer DESCRIBE is allowed on every token, as in Kafka;
	// the owners filter keeps those an owner owns, requested or renews.
	if d := describeTokens(t, alice); len(d.TokenDetails) != 2 {
		t.Fatalf("alice sees %d tokens, want both (no authorizer)", len(d.TokenDetails))
	}
	byOwner := kmsg.NewPtrDescribeDelegationTokenRequest()
	owner := kmsg.NewDescribeDelegationTokenRequestOwner()
	owner.PrincipalType, owner.PrincipalName = "User", "alice"
	byOwner.Owners = append(byOwner.Owners, owner)
	if d, err := byOwner.RequestWith(timeoutCtx(t, 20*time.Second), bob); err != nil || len(d.TokenDetails) != 1 || d.TokenDetails[0].TokenID != created.TokenID {
		t.Fatalf("tokens of owner alice: %+v, %v; want alice's alone", d, err)
	}
	byOwner.Owners = byOwner.Owners[:0]
	if d, err := byOwner.RequestWith(timeoutCtx(t, 20*time.Second), bob); err != nil || len(d.TokenDetails) != 0 {
		t.Fatalf("an empty owners list: %+v, %v; want no token", d, err)
	}

	// Renew: bob may (a renewer), alice may not renew bob's own token.
	renew := kmsg.NewPtrRenewDelegationTokenRequest()
	renew.HMAC, renew.RenewTimeMillis = created.HMAC, 60000
	before := time.Now().UnixMilli()
	rr, err := renew.RequestWith(timeoutCtx(t, 20*time.Second), bob)
	if err != nil || rr.ErrorCode != 0 || rr.ExpiryTimestamp < before+60000 || rr.ExpiryTimestamp > time.Now().UnixMilli()+60000 {
		t.Fatalf("bob's renewal: %+v, %v; want about now+60s", rr, err)
	}
	renew.HMAC = bobsOwn.HMAC
	if rr, err := renew.RequestWith(timeoutCtx(t, 20*time.Second), alice); err != nil || rr.ErrorCode != kerr.DelegationTokenOwnerMismatch.Code {
		t.Fatalf("alice renewing bob's token: %+v, %v; want DELEGATION_TOKEN_OWNER_MISMATCH", rr, err)
	}
	renew.HMAC = []byte("no such token")
	if rr, err := renew.RequestWith(timeoutCtx(t, 20*time.Second), alice); err != nil || rr.ErrorCode != kerr.DelegationTokenNotFound.Code {
		t.Fatalf("renewing an unknown HMAC: %+v, %v; want DELEGATION_TOKEN_NOT_FOUND", rr, err)
	}

	// The tokens and their expiry survive a restart.
	p.kill()
	launchTokenStrata(t, dir, plain, saslAddr)
	after := newClient(t, saslAddr, tokenLogin(created.TokenID, created.HMAC), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	fetches := after.PollFetches(timeoutCtx(t, 20*time.Second))
	if err := fetches.Err(); err != nil || fetches.NumRecords() != 1 || string(fetches.Records()[0].Value) != "by token" {
		t.Fatalf("consume with the token after a restart: %d records, %v", fetches.NumRecords(), err)
	}
	alice = newClient(t, saslAddr, scramUser("alice", "alice-secret"))
	if d := describeTokens(t, alice); len(d.TokenDetails) != 2 || d.TokenDetails[0].TokenID != created.TokenID && d.TokenDetails[1].TokenID != created.TokenID ||
		d.TokenDetails[0].ExpiryTimestamp != rr.ExpiryTimestamp && d.TokenDetails[1].ExpiryTimestamp != rr.ExpiryTimestamp {
		t.Fatalf("after the restart alice sees %+v, want both tokens, hers with the renewed expiry %d", d.TokenDetails, rr.ExpiryTimestamp)
	}

	// Expire it at once: gone, and it no longer logs in.
	expire := kmsg.NewPtrExpireDelegationTokenRequest()
	expire.HMAC, expire.ExpiryPeriodMillis = created.HMAC, -1
	if er, err := expire.RequestWith(timeoutCtx(t, 20*time.Second), alice); err != nil || er.ErrorCode != 0 {
		t.Fatalf("expire: %+v, %v", er, err)
	}
	if d := describeTokens(t, alice); len(d.TokenDetails) != 1 || d.TokenDetails[0].TokenID != bobsOwn.TokenID {
		t.Fatalf("after expiring hers alice sees %+v, want bob's alone", d.TokenDetails)
	}
	if got := scramLogin(t, saslAddr, scram.Auth{User: created.TokenID, Pass: base64.StdEncoding.EncodeToString(created.HMAC), IsToken: true}.AsSha512Mechanism()); got == "ok" {
		t.Fatal("an expired token still logs in")
	}
}

// TestDelegationTokensDisabled: without delegation.token.secret.key,
// creating a token is DELEGATION_TOKEN_AUTH_DISABLED, as in Kafka.
func TestDelegationTokensDisabled(t *testing.T) {
	dir := t.TempDir()
	plain := "127.0.0.1:" + strconv.Itoa(freePort(t))
	saslAddr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	startScramStrata(t, dir, plain, saslAddr)
	if _, err := kadm.NewClient(newClient(t, plain)).AlterUserSCRAMs(timeoutCtx(t, 20*time.Second), nil, []kadm.UpsertSCRAM{
		{User: "alice", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "alice-secret"}}); err != nil {
		t.Fatal(err)
	}
	alice := newClient(t, saslAddr, scramUser("alice", "alice-secret"))
	if got := createToken(t, alice).ErrorCode; got != kerr.DelegationTokenAuthDisabled.Code {
		t.Fatalf("create: %v, want DELEGATION_TOKEN_AUTH_DISABLED", kerr.ErrorForCode(got))
	}
	if got := describeTokens(t, alice).ErrorCode; got != kerr.DelegationTokenAuthDisabled.Code {
		t.Fatalf("describe: %v, want DELEGATION_TOKEN_AUTH_DISABLED", kerr.ErrorForCode(got))
	}
}

// tokenSecretLine enables delegation tokens on both brokers of the side by
// side test.
const tokenSecretLine = "delegation.token.secret.key=a-secret-every-node-shares"

// delegationTokenCommand runs kafka-delegation-tokens against tg's SCRAM
// listener as the user props logs in as; its output, or its error.
func delegationTokenCommand(t *testing.T, tg scramTarget, props string, args ...string) string {
	t.Helper()
	stdout, stderr, err := runKafkaTool(t, kafkaToolsHome(t), "", "org.apache.kafka.tools.DelegationTokenCommand",
		append([]string{"--bootstrap-server", tg.sasl, "--command-config", props}, args...)...)
	if err != nil {
		if m := regexp.MustCompile(`org\.apache\.kafka\.common\.errors\.(\w+): .*`).FindString(stdout + stderr); m != "" {
			return m
		}
		return fmt.Sprintf("%v: %s", err, tail(stdout+stderr, 400))
	}
	return stdout
}

// tokenRow is the token id and HMAC of the first row kafka-delegation-tokens
// prints under its TOKENID header.
func tokenRow(out string) (id, hmac string) {
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "TOKENID") && i+2 < len(lines) {
			f := strings.Fields(lines[i+2])
			if len(f) >= 2 {
				return f[0], f[1]
			}
		}
	}
	return "", ""
}

// normalTokens is kafka-delegation-tokens' output with what differs from
// run to run (ids, HMACs, dates, column widths) replaced.
func normalTokens(out string, ids ...string) string {
	for _, id := range ids {
		if id != "" {
			out = strings.ReplaceAll(out, id, "<id>")
		}
	}
	out = regexp.MustCompile(`[A-Za-z0-9+/]{80,}={0,2}`).ReplaceAllString(out, "<hmac>")
	out = regexp.MustCompile(`\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?(\.\d+)?`).ReplaceAllString(out, "<date>")
	out = regexp.MustCompile(`\b\d{13}\b`).ReplaceAllString(out, "<ms>")
	out = regexp.MustCompile(`-{3,}`).ReplaceAllString(out, "---")
	return regexp.MustCompile(`[ \t]+`).ReplaceAllString(strings.TrimSpace(out), " ")
}

// TestDelegationTokenCLILikeKafka runs kafka-delegation-tokens (create,
// describe, renew, expire) and a Java console producer logging in with the
// token against strata and Apache Kafka side by side, and checks both
// answer each step the same.
func TestDelegationTokenCLILikeKafka(t *testing.T) {
	e2e(t)
	dir := t.TempDir()
	_, plain, saslAddr := startTokenStrata(t, dir)
	kafka := startScramKafka(t, tokenSecretLine)
	if _, err := kadm.NewClient(newClient(t, kafka.plain)).AlterUserSCRAMs(timeoutCtx(t, 20*time.Second), nil, []kadm.UpsertSCRAM{
		{User: "alice", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "alice-secret"},
		{User: "bob", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "bob-secret"},
	}); err != nil {
		t.Fatal(err)
	}
	targets := []scramTarget{{name: "strata", plain: plain, sasl: saslAddr}, kafka}
	props := t.TempDir()
	alice := scramProps(t, props, "SCRAM-SHA-256", "alice", "alice-secret")
	bob := scramProps(t, props, "SCRAM-SHA-256", "bob", "bob-secret")
	steps := map[string][]string{}
	record := func(tg scramTarget, step, got string) {
		steps[step] = append(steps[step], tg.name+": "+got)
	}
	for _, tg := range targets {
		created := delegationTokenCommand(t, tg, alice, "--create", "--max-life-time-period", "-1", "--renewer-principal", "User:bob")
		id, hmac := tokenRow(created)
		if id == "" {
			t.Fatalf("%s: no token created:\n%s", tg.name, created)
		}
		record(tg, "create", normalTokens(created, id))
		tokenProps := filepath.Join(props, tg.name+"-token.properties")
		writeFile(t, tokenProps, fmt.Sprintf("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n"+
			"sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username=\"%s\" password=\"%s\" tokenauth=true;\n", id, hmac))
		record(tg, "produce with the token", consoleProduce(t, tg, tokenProps, "tokens", "by token"))
		record(tg, "describe as a token", normalTokens(delegationTokenCommand(t, tg, tokenProps, "--describe"), id))
		record(tg, "describe as alice", normalTokens(delegationTokenCommand(t, tg, alice, "--describe", "--owner-principal", "User:alice"), id))
		record(tg, "renew as bob", normalTokens(delegationTokenCommand(t, tg, bob, "--renew", "--hmac", hmac, "--renew-time-period", "-1"), id))
		record(tg, "expire as alice", normalTokens(delegationTokenCommand(t, tg, alice, "--expire", "--hmac", hmac, "--expiry-time-period", "-1"), id))
		record(tg, "describe after expiry", normalTokens(delegationTokenCommand(t, tg, alice, "--describe"), id))
		record(tg, "renew after expiry", normalTokens(delegationTokenCommand(t, tg, bob, "--renew", "--hmac", hmac, "--renew-time-period", "-1"), id))
	}
	for _, step := range []string{"create", "produce with the token", "describe as a token", "describe as alice", "renew as bob",
		"expire as alice", "describe after expiry", "renew after expiry"} {
		got := steps[step]
		t.Logf("%s:\n  %s", step, strings.Join(got, "\n  "))
		if len(got) != 2 || strings.TrimPrefix(got[0], "strata: ") != strings.TrimPrefix(got[1], "kafka: ") {
			t.Errorf("%s differs:\n  %s", step, strings.Join(got, "\n  "))
		}
	}
}
