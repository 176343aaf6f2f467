package main

import (
	"context"
	"crypto/pbkdf2"
	"crypto/sha512"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// scramLines are the keys of a SASL_PLAINTEXT listener named
// SASL_PLAINTEXT serving both SCRAM mechanisms, the same for strata and
// Kafka: the users are in the metadata, the JAAS entries only have to be
// there.
var scramLines = []string{
	"sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512",
	"listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config=" + scramLoginModule,
	"listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config=" + scramLoginModule,
}

// scramTarget is a broker with a PLAINTEXT listener (for the admin tools)
// and a SASL_PLAINTEXT one serving SCRAM.
type scramTarget struct {
	name, plain, sasl string
}

// startScramStrata starts strata on dir with a PLAINTEXT listener at plain
// and a SCRAM listener at saslAddr.
func startScramStrata(t *testing.T, dir, plain, saslAddr string) *proc {
	t.Helper()
	args := []string{
		"--override", "listeners=PLAINTEXT://" + plain + ",SASL_PLAINTEXT://" + saslAddr,
		"--override", "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
		"--override", "log.dirs=" + dir,
	}
	for _, l := range scramLines {
		args = append(args, "--override", l)
	}
	p := launchArgs(t, dir, plain, args...)
	p.waitReady(30 * time.Second)
	return p
}

// startScramKafka starts Apache Kafka 4.4.0 in KRaft combined mode with the
// same SCRAM listener next to its PLAINTEXT one (inter-broker and
// controller listeners stay PLAINTEXT, so the controller needs nothing of
// SASL), and the extra lines in its server.properties.
func startScramKafka(t *testing.T, extra ...string) scramTarget {
	t.Helper()
	dir := t.TempDir()
	k := newKafka(t, dir)
	saslAddr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	props := filepath.Join(dir, "server.properties")
	data, err := os.ReadFile(props)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "listeners="), strings.HasPrefix(l, "advertised.listeners="):
			lines[i] = l + ",SASL_PLAINTEXT://" + saslAddr
		case strings.HasPrefix(l, "listener.security.protocol.map="):
			lines[i] = l + ",SASL_PLAINTEXT:SASL_PLAINTEXT"
		}
	}
	writeFile(t, props, strings.Join(slices.Concat(lines, scramLines, extra), "\n")+"\n")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := k.Start(ctx); err != nil {
		t.Fatalf("start kafka: %v", err)
	}
	return scramTarget{name: "kafka", plain: k.Addr(), sasl: saslAddr}
}

// kafkaConfigs runs kafka-configs against tg and returns its outcome: its
// output on success, else the exception it reports.
func kafkaConfigs(t *testing.T, tg scramTarget, args ...string) string {
	t.Helper()
	stdout, stderr, err := runKafkaTool(t, kafkaToolsHome(t), "", "org.apache.kafka.tools.ConfigCommand", append([]string{"--bootstrap-server", tg.plain}, args...)...)
	if err == nil {
		return strings.TrimSpace(stdout)
	}
	if m := regexp.MustCompile(`Caused by: org\.apache\.kafka\.common\.errors\.(\w+: .*)`).FindStringSubmatch(stdout + stderr); m != nil {
		return m[1]
	}
	return fmt.Sprintf("%v: %s", err, tail(stdout+stderr, 400))
}

// scramProps writes the Java client properties of user with password over
// mechanism.
func scramProps(t *testing.T, dir, mechanism, user, password string) string {
	name := filepath.Join(dir, fmt.Sprintf("%s-%s-%s.properties", mechanism, user, password))
	writeFile(t, name, fmt.Sprintf("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=%s\n"+
		"sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username=\"%s\" password=\"%s\";\n", mechanism, user, password))
	return name
}

// consoleProduce runs the console producer over SCRAM: "produced", or the
// SaslAuthenticationException it reports.
func consoleProduce(t *testing.T, tg scramTarget, props, topic string, lines ...string) string {
	t.Helper()
	stdout, stderr, err := runKafkaTool(t, kafkaToolsHome(t), strings.Join(lines, "\n")+"\n", "org.apache.kafka.tools.ConsoleProducer",
		"--bootstrap-server", tg.sasl, "--topic", topic, "--command-config", props)
	out := stdout + stderr
	if m := regexp.MustCompile(`SaslAuthenticationException: ([^\n]*)`).FindStringSubmatch(out); m != nil {
		return m[1]
	}
	if err != nil {
		return fmt.Sprintf("%v: %s", err, tail(out, 400))
	}
	return "produced"
}

// scramLogin is what franz-go gets on tg's SCRAM listener: "ok" or its error.
func scramLogin(t *testing.T, addr string, mech sasl.Mechanism) string {
	t.Helper()
	cl := newClient(t, addr, kgo.SASL(mech), kgo.RequestRetries(0))
	defer cl.Close()
	if err := cl.Ping(timeoutCtx(t, 20*time.Second)); err != nil {
		return err.Error()
	}
	return "ok"
}

// describedSCRAMs is DescribeUserScramCredentials of every user, by kadm.
func describedSCRAMs(t *testing.T, addr string) string {
	t.Helper()
	d, err := kadm.NewClient(newClient(t, addr)).DescribeUserSCRAMs(timeoutCtx(t, 20*time.Second))
	if err != nil {
		return err.Error()
	}
	var users []string
	for _, u := range d.Sorted() {
		var infos []string
		for _, c := range u.CredInfos {
			infos = append(infos, fmt.Sprintf("%s/%d", c.Mechanism, c.Iterations))
		}
		// Kafka lists a user's mechanisms in a hash map's order.
		slices.Sort(infos)
		users = append(users, u.User+":"+strings.Join(infos, ","))
	}
	return strings.Join(users, " ")
}

// sortedMechanisms is kafka-configs' line of a user's SCRAM credentials
// with the mechanisms sorted: Kafka lists them in a hash map's order.
func sortedMechanisms(line string) string {
	head, list, ok := strings.Cut(line, " are ")
	if !ok {
		return line
	}
	mechs := strings.Split(list, ", ")
	slices.Sort(mechs)
	return head + " are " + strings.Join(mechs, ", ")
}

// TestScramKafkaToolsLikeKafka runs kafka-configs, the console producer and
// consumer, kcat and franz-go with SCRAM against strata and Kafka 4.4.0
// side by side, step by step, and checks both answer each step the same,
// and as written here where the answer does not depend on the client's
// version.
func TestScramKafkaToolsLikeKafka(t *testing.T) {
	e2e(t)
	installedKafkaTools(t)
	dir := t.TempDir()
	plain, saslAddr := "127.0.0.1:"+strconv.Itoa(freePort(t)), "127.0.0.1:"+strconv.Itoa(freePort(t))
	startScramStrata(t, filepath.Join(dir, "strata"), plain, saslAddr)
	targets := []scramTarget{{name: "strata", plain: plain, sasl: saslAddr}, startScramKafka(t)}

	const refused = "Authentication failed during authentication due to invalid credentials with SASL mechanism "
	users := []string{"--entity-type", "users", "--entity-name", "alice"}
	steps := []struct {
		name string
		run  func(tg scramTarget) string
		want string
	}{
		{"both mechanisms in one kafka-configs (one request: Kafka's controller refuses the user twice)", func(tg scramTarget) string {
			return kafkaConfigs(t, tg, append([]string{"--alter", "--add-config", "SCRAM-SHA-512=[iterations=8192,password=alice-secret],SCRAM-SHA-256=[password=alice-secret]"}, users...)...)
		}, "DuplicateResourceException: A user credential cannot be altered twice in the same request"},
		{"add SCRAM-SHA-512", func(tg scramTarget) string {
			return kafkaConfigs(t, tg, append([]string{"--alter", "--add-config", "SCRAM-SHA-512=[iterations=8192,password=alice-secret]"}, users...)...)
		}, "Completed updating config for user alice."},
		{"add SCRAM-SHA-256", func(tg scramTarget) string {
			return kafkaConfigs(t, tg, append([]string{"--alter", "--add-config", "SCRAM-SHA-256=[password=alice-secret]"}, users...)...)
		}, "Completed updating config for user alice."},
		{"describe", func(tg scramTarget) string { return describedSCRAMs(t, tg.plain) }, "alice:SCRAM-SHA-256/4096,SCRAM-SHA-512/8192"},
		{"kafka-configs --describe", func(tg scramTarget) string {
			return sortedMechanisms(kafkaConfigs(t, tg, "--describe", "--entity-type", "users"))
		}, "SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=4096, SCRAM-SHA-512=iterations=8192"},
		{"console producer SCRAM-SHA-512", func(tg scramTarget) string {
			return consoleProduce(t, tg, scramProps(t, dir, "SCRAM-SHA-512", "alice", "alice-secret"), "scram-console", "one", "two", "three")
		}, "produced"},
		{"console consumer SCRAM-SHA-256", func(tg scramTarget) string {
			stdout, stderr, err := runKafkaTool(t, kafkaToolsHome(t), "", "org.apache.kafka.tools.consumer.ConsoleConsumer", "--bootstrap-server", tg.sasl,
				"--topic", "scram-console", "--from-beginning", "--max-messages", "3", "--timeout-ms", "60000",
				"--command-config", scramProps(t, dir, "SCRAM-SHA-256", "alice", "alice-secret"))
			if err != nil {
				return fmt.Sprintf("%v: %s", err, tail(stdout+stderr, 400))
			}
			return strings.Join(strings.Fields(stdout), " ")
		}, "one two three"},
		{"console producer, wrong password", func(tg scramTarget) string {
			return consoleProduce(t, tg, scramProps(t, dir, "SCRAM-SHA-512", "alice", "wrong"), "scram-console", "refused")
		}, refused + "SCRAM-SHA-512"},
		{"console producer, unknown user", func(tg scramTarget) string {
			return consoleProduce(t, tg, scramProps(t, dir, "SCRAM-SHA-512", "mallory", "alice-secret"), "scram-console", "refused")
		}, refused + "SCRAM-SHA-512"},
		{"kcat SCRAM-SHA-256 (librdkafka 2.0.2 sends its nonce and the server's, which Kafka 4 refuses)", func(tg scramTarget) string {
			bin, err := exec.LookPath("kcat")
			if err != nil {
				return "kcat not installed"
			}
			out, err := kcatOutput(t, bin, "-b", tg.sasl, "-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanisms=SCRAM-SHA-256",
				"-X", "sasl.username=alice", "-X", "sasl.password=alice-secret", "-L", "-m", "10")
			if err == nil {
				return "listed"
			}
			if m := regexp.MustCompile(`SASL authentication error: ([^(\n]*)`).FindStringSubmatch(out); m != nil {
				return "refused: " + strings.TrimSpace(m[1])
			}
			return fmt.Sprintf("%v: %s", err, tail(out, 400))
		}, ""},
		{"delete SCRAM-SHA-256", func(tg scramTarget) string {
			return kafkaConfigs(t, tg, append([]string{"--alter", "--delete-config", "SCRAM-SHA-256"}, users...)...)
		}, "Completed updating config for user alice."},
		{"franz-go SCRAM-SHA-256 after its deletion", func(tg scramTarget) string {
			return scramLogin(t, tg.sasl, scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism())
		}, "SASL_AUTHENTICATION_FAILED: SASL Authentication failed.: " + refused + "SCRAM-SHA-256"},
		{"franz-go SCRAM-SHA-512 still", func(tg scramTarget) string {
			return scramLogin(t, tg.sasl, scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism())
		}, "ok"},
		{"delete SCRAM-SHA-256 again", func(tg scramTarget) string {
			return kafkaConfigs(t, tg, append([]string{"--alter", "--delete-config", "SCRAM-SHA-256"}, users...)...)
		}, "ResourceNotFoundException: Attempt to delete a user credential that does not exist"},
	}
	for _, st := range steps {
		var answers []string
		for _, tg := range targets {
			got := st.run(tg)
			t.Logf("%s: %s: %s", tg.name, st.name, got)
			if st.want != "" && got != st.want {
				t.Errorf("%s: %s:\n got  %s\n want %s", tg.name, st.name, got, st.want)
			}
			answers = append(answers, got)
		}
		if len(answers) == 2 && answers[0] != answers[1] {
			t.Errorf("%s: strata answered %q, kafka %q", st.name, answers[0], answers[1])
		}
	}
}

// TestScramClientsAndRestart: franz-go produces and consumes with
// SCRAM-SHA-256 and SCRAM-SHA-512 credentials kadm upserted; they survive
// a restart, kept in strata-access.json.
func TestScramClientsAndRestart(t *testing.T) {
	e2e(t)
	dir := t.TempDir()
	plain, saslAddr := "127.0.0.1:"+strconv.Itoa(freePort(t)), "127.0.0.1:"+strconv.Itoa(freePort(t))
	p := startScramStrata(t, dir, plain, saslAddr)
	altered, err := kadm.NewClient(newClient(t, plain)).AlterUserSCRAMs(timeoutCtx(t, 20*time.Second), nil, []kadm.UpsertSCRAM{
		{User: "bob", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "bob-secret"},
		{User: "carol", Mechanism: kadm.ScramSha512, Iterations: 16384, Password: "carol-secret"},
	})
	if err != nil || altered.Error() != nil {
		t.Fatalf("upsert: %v %v", err, altered.Error())
	}
	bob := kgo.SASL(scram.Auth{User: "bob", Pass: "bob-secret"}.AsSha256Mechanism())
	carol := kgo.SASL(scram.Auth{User: "carol", Pass: "carol-secret"}.AsSha512Mechanism())
	createTopic(t, newClient(t, saslAddr, bob), "scram-go", 2)
	acked := produceAll(t, newClient(t, saslAddr, bob), "scram-go", 0, 100)
	checkAcked(t, acked, consumeAll(t, saslAddr, "scram-go", len(acked), carol))

	if code := p.signal(syscall.SIGTERM, 30*time.Second); code != 0 {
		t.Fatalf("strata exited %d on SIGTERM", code)
	}
	if _, err := os.Stat(filepath.Join(dir, "strata-access.json")); err != nil {
		t.Fatalf("access state: %v", err)
	}
	startScramStrata(t, dir, plain, saslAddr)
	if got := describedSCRAMs(t, plain); got != "bob:SCRAM-SHA-256/4096 carol:SCRAM-SHA-512/16384" {
		t.Errorf("after the restart: %s", got)
	}
	checkAcked(t, acked, consumeAll(t, saslAddr, "scram-go", len(acked), bob))
	if got := scramLogin(t, saslAddr, scram.Auth{User: "carol", Pass: "bob-secret"}.AsSha512Mechanism()); got == "ok" {
		t.Error("carol logs in with bob's password after the restart")
	}
}

// TestScramCluster: a credential added through a node that is not the
// active controller (forwarded to it) authenticates its user on another
// node and is described there; its deletion through that other node ends
// the logins on the first.
func TestScramCluster(t *testing.T) {
	e2e(t)
	nodes := startCluster(t, append([]string{
		"listeners=PLAINTEXT://{addr},SASL_PLAINTEXT://{addr2},CONTROLLER://{controller}",
		"advertised.listeners=PLAINTEXT://{addr},SASL_PLAINTEXT://{addr2},CONTROLLER://{controller}",
		"listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
	}, scramLines...)...)
	var controller int32 = -1
	waitFor(t, "an active controller", 30*time.Second, func() bool {
		m, err := metadataOf(nodes[0].addr)
		if err == nil {
			controller = m.ControllerID
		}
		return err == nil && controller > 0
	})
	var others []*clusterNode
	for _, n := range nodes {
		if n.id != controller {
			others = append(others, n)
		}
	}
	via, on := others[0], others[1]
	t.Logf("controller %d; altering through node %d, logging in on node %d", controller, via.id, on.id)

	salt := []byte("dave-salt")
	salted, err := pbkdf2.Key(sha512.New, "dave-secret", salt, 4096, sha512.Size)
	if err != nil {
		t.Fatal(err)
	}
	up := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	up.Upsertions = []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{{Name: "dave", Mechanism: 2, Iterations: 4096, Salt: salt, SaltedPassword: salted}}
	alter := func(n *clusterNode, req *kmsg.AlterUserSCRAMCredentialsRequest) {
		t.Helper()
		resp, err := request(n.addr, req)
		if err != nil {
			t.Fatalf("AlterUserScramCredentials through node %d: %v", n.id, err)
		}
		if r := resp.(*kmsg.AlterUserSCRAMCredentialsResponse).Results; len(r) != 1 || r[0].ErrorCode != 0 {
			t.Fatalf("AlterUserScramCredentials through node %d: %+v", n.id, r)
		}
	}
	alter(via, up)
	dave := scram.Auth{User: "dave", Pass: "dave-secret"}.AsSha512Mechanism()
	if got := scramLogin(t, via.addr2, dave); got != "ok" {
		t.Errorf("dave on node %d, which forwarded his credential: %s", via.id, got)
	}
	waitFor(t, fmt.Sprintf("dave logging in on node %d", on.id), 20*time.Second, func() bool { return scramLogin(t, on.addr2, dave) == "ok" })
	if got := describedSCRAMs(t, on.addr); got != "dave:SCRAM-SHA-512/4096" {
		t.Errorf("described on node %d: %s", on.id, got)
	}
	del := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	del.Deletions = []kmsg.AlterUserSCRAMCredentialsRequestDeletion{{Name: "dave", Mechanism: 2}}
	alter(on, del)
	waitFor(t, fmt.Sprintf("dave refused on node %d", via.id), 20*time.Second, func() bool { return scramLogin(t, via.addr2, dave) != "ok" })
}
