package main

// The StandardAuthorizer end to end: one script of what an operator and a
// user do (kafka-acls, a producer, Kafka's console consumer, a restart),
// run against Strata and against Apache Kafka 4.4.0 started from the same
// server.properties, each step's outcome checked and compared.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// aclProps is the server.properties both brokers run: a combined KRaft
// node with a PLAINTEXT listener (inter-broker and the test's readiness
// check), a SASL_PLAINTEXT one with the PLAIN users admin and alice, and
// the StandardAuthorizer with admin and the nodes' own PLAINTEXT principal
// as super users, no allow-everyone.
func aclProps(plainAddr, saslAddr, ctrlAddr, dir string) string {
	return strings.Join([]string{
		"process.roles=broker,controller",
		"node.id=1",
		"controller.quorum.voters=1@" + ctrlAddr,
		"listeners=PLAINTEXT://" + plainAddr + ",SASL_PLAINTEXT://" + saslAddr + ",CONTROLLER://" + ctrlAddr,
		"advertised.listeners=PLAINTEXT://" + plainAddr + ",SASL_PLAINTEXT://" + saslAddr,
		"controller.listener.names=CONTROLLER",
		"inter.broker.listener.name=PLAINTEXT",
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
		"sasl.enabled.mechanisms=PLAIN",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config=" + saslJAAS,
		"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users=User:admin;User:ANONYMOUS",
		"log.dirs=" + dir,
		"num.partitions=1",
		"offsets.topic.replication.factor=1",
		"offsets.topic.num.partitions=1",
		"transaction.state.log.replication.factor=1",
		"transaction.state.log.min.isr=1",
		"group.initial.rebalance.delay.ms=0",
	}, "\n") + "\n"
}

// aclTarget is a broker the script runs against.
type aclTarget struct {
	name    string
	sasl    string // the SASL_PLAINTEXT listener's address
	restart func()
}

// strataACLTarget is strata started from aclProps.
func strataACLTarget(t *testing.T) *aclTarget {
	dir := t.TempDir()
	plainAddr, saslAddr := "127.0.0.1:"+strconv.Itoa(freePort(t)), "127.0.0.1:"+strconv.Itoa(freePort(t))
	props := filepath.Join(dir, "server.properties")
	writeFile(t, props, aclProps(plainAddr, saslAddr, "127.0.0.1:"+strconv.Itoa(freePort(t)), filepath.Join(dir, "data")))
	p := launchArgs(t, dir, plainAddr, props)
	p.waitReady(30 * time.Second)
	return &aclTarget{name: "strata", sasl: saslAddr, restart: func() {
		if code := p.signal(syscall.SIGTERM, 30*time.Second); code != 0 {
			t.Fatalf("strata exited %d on SIGTERM", code)
		}
		p = launchArgs(t, dir, plainAddr, props)
		p.waitReady(30 * time.Second)
	}}
}

// kafkaACLTarget is Apache Kafka installed in home in KRaft combined
// mode, chaos's server.properties followed by aclProps (a later key wins
// in Java's properties).
func kafkaACLTarget(t *testing.T, name, home string) *aclTarget {
	dir := t.TempDir()
	k := newKafkaFrom(t, home, dir)
	props := filepath.Join(dir, "server.properties")
	data, err := os.ReadFile(props)
	if err != nil {
		t.Fatal(err)
	}
	voters := regexp.MustCompile(`(?m)^controller\.quorum\.voters=1@(.*)$`).FindStringSubmatch(string(data))
	if voters == nil {
		t.Fatalf("no controller.quorum.voters in %s", props)
	}
	saslAddr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	writeFile(t, props, string(data)+aclProps(k.Addr(), saslAddr, voters[1], filepath.Join(dir, "data")))
	start := func() {
		if err := k.Start(timeoutCtx(t, 2*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	start()
	return &aclTarget{name: name, sasl: saslAddr, restart: func() {
		if err := k.Stop(); err != nil {
			t.Fatal(err)
		}
		start()
	}}
}

// user is a client option set authenticating as name (password
// <name>-secret) over PLAIN.
func user(name string) []kgo.Opt {
	return []kgo.Opt{kgo.SASL(plain.Auth{User: name, Pass: name + "-secret"}.AsMechanism())}
}

// outcome names an error as the script compares it: its Kafka error code,
// "ok" for none.
func outcome(err error) string {
	var ke *kerr.Error
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &ke):
		return ke.Message
	}
	return err.Error()
}

// eventually retries do until it gives want, for at most 20 s (Kafka's
// brokers apply an ACL change a moment after they answer it), and returns
// the last outcome.
func eventually(want string, do func() string) string {
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := do()
		if got == want || time.Now().After(deadline) {
			return got
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// aclScript runs the script against tg and returns each step with its
// outcome, in order; a step whose outcome is not the expected one fails
// the test.
func aclScript(t *testing.T, tg *aclTarget) []string {
	home := kafkaToolsHome(t)
	cmdConfig := filepath.Join(t.TempDir(), "client.properties")
	var steps []string
	step := func(name, want, got string) {
		t.Helper()
		steps = append(steps, name+": "+got)
		if got != want {
			t.Errorf("%s: %s: %q, want %q", tg.name, name, got, want)
		}
	}
	clientProps := func(name string) string {
		writeFile(t, cmdConfig, "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"+
			fmt.Sprintf("sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username=%q password=%q;\n", name, name+"-secret"))
		return cmdConfig
	}
	acls := func(args ...string) string {
		stdout, stderr, err := runKafkaTool(t, home, "", "org.apache.kafka.tools.AclCommand",
			append([]string{"--bootstrap-server", tg.sasl, "--command-config", clientProps("admin")}, args...)...)
		if err != nil {
			t.Fatalf("%s: kafka-acls %v: %v\n%s%s", tg.name, args, err, stdout, stderr)
		}
		return stdout
	}
	produce := func(topic string) string {
		cl := newClient(t, tg.sasl, append(user("alice"), kgo.RequestRetries(2), kgo.RecordRetries(2))...)
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return outcome(cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(topic + " from alice")}).FirstErr())
	}
	aliceTopics := func() string {
		cl := newClient(t, tg.sasl, user("alice")...)
		defer cl.Close()
		topics, err := kadm.NewClient(cl).ListTopics(timeoutCtx(t, 10*time.Second))
		if err != nil {
			return outcome(err)
		}
		return fmt.Sprint(topics.Names())
	}
	consume := func(maxMessages int) string {
		stdout, stderr, err := runKafkaTool(t, home, "", "org.apache.kafka.tools.consumer.ConsoleConsumer", "--bootstrap-server", tg.sasl,
			"--topic", "t", "--group", "g", "--from-beginning", "--max-messages", strconv.Itoa(maxMessages), "--timeout-ms", "20000",
			"--command-config", clientProps("alice"))
		if m := regexp.MustCompile(`org\.apache\.kafka\.common\.errors\.(\w+Exception)`).FindStringSubmatch(stderr); m != nil {
			return m[1]
		}
		if err != nil {
			return fmt.Sprintf("%v: %s", err, tail(stderr, 400))
		}
		return strings.Join(strings.Fields(stdout), " ")
	}
	// listed is kafka-acls --list reduced to its ACL lines, sorted: the
	// order of resources is a map's in both brokers.
	listed := func() string {
		var lines []string
		for _, l := range strings.Split(acls("--list"), "\n") {
			if l = strings.TrimSpace(l); l != "" {
				lines = append(lines, l)
			}
		}
		slices.Sort(lines)
		return strings.Join(lines, "\n")
	}

	admin := kadm.NewClient(newClient(t, tg.sasl, user("admin")...))
	if _, err := admin.CreateTopics(timeoutCtx(t, 30*time.Second), 1, 1, nil, "t", "pre-t", "pre-secret"); err != nil {
		t.Fatalf("%s: create topics: %v", tg.name, err)
	}
	step("alice produces to t with no ACL", "TOPIC_AUTHORIZATION_FAILED", produce("t"))
	step("alice's metadata with no ACL", "[]", aliceTopics())
	step("alice consumes t with no ACL", "TopicAuthorizationException", consume(1))

	acls("--add", "--allow-principal", "User:alice", "--operation", "Write", "--topic", "t")
	step("alice produces to t with WRITE", "ok", eventually("ok", func() string { return produce("t") }))
	step("alice's metadata with WRITE on t", "[t]", eventually("[t]", aliceTopics))
	produce("t")
	acls("--add", "--allow-principal", "User:alice", "--operation", "Read", "--topic", "t", "--group", "g")
	want := "t from alice t from alice"
	step("alice's console consumer with READ on t and g", want, eventually(want, func() string { return consume(2) }))

	acls("--add", "--allow-principal", "User:alice", "--operation", "Write", "--topic", "pre-", "--resource-pattern-type", "prefixed")
	step("alice produces to pre-t under a prefixed ALLOW", "ok", eventually("ok", func() string { return produce("pre-t") }))
	acls("--add", "--deny-principal", "User:alice", "--operation", "Write", "--topic", "pre-secret")
	step("alice produces to pre-secret under a DENY", "TOPIC_AUTHORIZATION_FAILED",
		eventually("TOPIC_AUTHORIZATION_FAILED", func() string { return produce("pre-secret") }))
	before := listed()
	steps = append(steps, "kafka-acls --list:\n"+before)
	for _, l := range []string{"(principal=User:alice, host=*, operation=WRITE, permissionType=ALLOW)",
		"(principal=User:alice, host=*, operation=WRITE, permissionType=DENY)", "(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)"} {
		if !strings.Contains(before, l) {
			t.Errorf("%s: kafka-acls --list has no %s:\n%s", tg.name, l, before)
		}
	}

	tg.restart()
	step("after a restart alice produces to t", "ok", eventually("ok", func() string { return produce("t") }))
	step("after a restart alice produces to pre-secret", "TOPIC_AUTHORIZATION_FAILED", produce("pre-secret"))
	if after := listed(); after != before {
		t.Errorf("%s: kafka-acls --list after the restart:\n%s\nbefore:\n%s", tg.name, after, before)
	}

	acls("--remove", "--allow-principal", "User:alice", "--operation", "Write", "--topic", "t", "--force")
	step("alice produces to t once WRITE is removed", "TOPIC_AUTHORIZATION_FAILED",
		eventually("TOPIC_AUTHORIZATION_FAILED", func() string { return produce("t") }))
	return append(steps, aclEdgeCases(t, tg)...)
}

// aclEdgeCases sends what kafka-acls never does and returns each answer:
// creations Kafka refuses, alice's requests, a code Kafka's parser does
// not know.
func aclEdgeCases(t *testing.T, tg *aclTarget) []string {
	creation := func(mutate func(c *kmsg.CreateACLsRequestCreation)) kmsg.CreateACLsRequestCreation {
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceTypeTopic, "edge", kmsg.ACLResourcePatternTypeLiteral
		c.Principal, c.Host, c.Operation, c.PermissionType = "User:bob", "*", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
		mutate(&c)
		return c
	}
	send := func(as string, req kmsg.Request) string {
		cl := newClient(t, tg.sasl, append(user(as), kgo.RequestRetries(0))...)
		defer cl.Close()
		resp, err := cl.Request(timeoutCtx(t, 20*time.Second), req)
		if err != nil {
			return "error: " + strings.SplitN(err.Error(), ":", 2)[0]
		}
		switch r := resp.(type) {
		case *kmsg.CreateACLsResponse:
			var out []string
			for _, res := range r.Results {
				msg := ""
				if res.ErrorMessage != nil {
					msg = " " + *res.ErrorMessage
				}
				out = append(out, fmt.Sprint(kerr.ErrorForCode(res.ErrorCode))+msg)
			}
			return strings.Join(out, "; ")
		case *kmsg.DescribeACLsResponse:
			return fmt.Sprint(kerr.ErrorForCode(r.ErrorCode))
		}
		return fmt.Sprintf("%T", resp)
	}
	create := func(as string, creations ...kmsg.CreateACLsRequestCreation) string {
		req := kmsg.NewPtrCreateACLsRequest()
		req.Creations = creations
		return send(as, req)
	}
	var out []string
	for _, tc := range []struct{ name, got string }{
		{"CLUSTER named other than kafka-cluster", create("admin", creation(func(c *kmsg.CreateACLsRequestCreation) {
			c.ResourceType, c.ResourceName, c.Operation = kmsg.ACLResourceTypeCluster, "c", kmsg.ACLOperationAlter
		}))},
		{"an empty name", create("admin", creation(func(c *kmsg.CreateACLsRequestCreation) { c.ResourceName = "" }))},
		{"a principal without a colon", create("admin", creation(func(c *kmsg.CreateACLsRequestCreation) { c.Principal = "bob" }))},
		{"pattern MATCH beside a valid one", create("admin", creation(func(*kmsg.CreateACLsRequestCreation) {}),
			creation(func(c *kmsg.CreateACLsRequestCreation) { c.ResourcePatternType = kmsg.ACLResourcePatternTypeMatch }))},
		{"operation ANY", create("admin", creation(func(c *kmsg.CreateACLsRequestCreation) { c.Operation = kmsg.ACLOperationAny }))},
		{"resource type ANY", create("admin", creation(func(c *kmsg.CreateACLsRequestCreation) { c.ResourceType = kmsg.ACLResourceTypeAny }))},
		{"operation UNKNOWN", create("admin", creation(func(c *kmsg.CreateACLsRequestCreation) { c.Operation = kmsg.ACLOperationUnknown }))},
		// Kafka's message is its request's toString: the code alone.
		{"alice creates", strings.SplitN(create("alice", creation(func(*kmsg.CreateACLsRequestCreation) {})), ":", 2)[0]},
		{"alice describes", send("alice", func() kmsg.Request {
			r := kmsg.NewPtrDescribeACLsRequest()
			r.ResourceType, r.ResourcePatternType, r.Operation, r.PermissionType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny,
				kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
			return r
		}())},
	} {
		out = append(out, tc.name+": "+tc.got)
	}
	return out
}

// TestStandardAuthorizerAgainstKafka runs the ACL script against Strata
// and Apache Kafka 4.4.0 from the same server.properties: alice may not
// produce, consume or see the topic until admin's kafka-acls allows her; a
// prefixed ALLOW and a DENY override apply; the ACLs survive a restart; and
// each step's outcome, and each edge case's answer, is the same on both.
func TestStandardAuthorizerAgainstKafka(t *testing.T) {
	e2e(t)
	home := installedKafkaTools(t)
	strata := aclScript(t, strataACLTarget(t))
	kafka := aclScript(t, kafkaACLTarget(t, "kafka", home))
	for i := range max(len(strata), len(kafka)) {
		var s, got string
		if i < len(strata) {
			s = strata[i]
		}
		if i < len(kafka) {
			got = kafka[i]
		}
		if s != got {
			t.Errorf("differs from kafka:\nstrata: %s\nkafka: %s", s, got)
		} else {
			t.Logf("same as kafka: %s", s)
		}
	}
}

// TestClusterStandardAuthorizer: in a three-node cluster with the
// StandardAuthorizer (the nodes' PLAINTEXT principal, User:ANONYMOUS, a
// super user, as Kafka requires of the inter-broker principal), an ACL
// kafka-acls adds through a node that is not the active controller is
// enforced on the other one; a topic of three replicas takes alice's
// acks=all writes (the followers fetch with CLUSTER_ACTION); and a request
// a node forwards is authorized as its client: alice may neither create a
// topic nor an ACL through it.
func TestClusterStandardAuthorizer(t *testing.T) {
	e2e(t)
	ctrl, via, other := startAuthorizerCluster(t, "User:admin;User:ANONYMOUS")
	admin := kadm.NewClient(newClient(t, via.addr2, user("admin")...))
	if _, err := admin.CreateTopics(timeoutCtx(t, 30*time.Second), 1, 3, nil, "t"); err != nil {
		t.Fatal(err)
	}
	produce := func(n *clusterNode) string {
		cl := newClient(t, n.addr2, append(user("alice"), kgo.RequestRetries(2), kgo.RecordRetries(2))...)
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return outcome(cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte("v")}).FirstErr())
	}
	if got := produce(other); got != "TOPIC_AUTHORIZATION_FAILED" {
		t.Fatalf("alice's produce through node %d with no ACL: %s", other.id, got)
	}
	if err := createTopicAt(t, via, "alice", "alices"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("alice's CreateTopics through node %d (forwarded): %v; want TOPIC_AUTHORIZATION_FAILED", via.id, err)
	}
	createACL := kmsg.NewPtrCreateACLsRequest()
	c := kmsg.NewCreateACLsRequestCreation()
	c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceTypeTopic, "t", kmsg.ACLResourcePatternTypeLiteral
	c.Principal, c.Host, c.Operation, c.PermissionType = "User:alice", "*", kmsg.ACLOperationWrite, kmsg.ACLPermissionTypeAllow
	createACL.Creations = []kmsg.CreateACLsRequestCreation{c}
	resp, err := createACL.RequestWith(timeoutCtx(t, 30*time.Second), newClient(t, via.addr2, user("alice")...).Broker(int(via.id)))
	if err != nil || len(resp.Results) != 1 || resp.Results[0].ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("alice's CreateAcls through node %d (forwarded): %v, %+v; want CLUSTER_AUTHORIZATION_FAILED", via.id, err, resp)
	}
	unregister := kmsg.NewPtrUnregisterControllerRequest()
	unregister.ControllerID = other.id
	for who, want := range map[string]*kerr.Error{"alice": kerr.ClusterAuthorizationFailed, "admin": kerr.UnsupportedVersion} {
		resp, err := unregister.RequestWith(timeoutCtx(t, 30*time.Second), newClient(t, via.addr2, user(who)...).Broker(int(via.id)))
		if err != nil || resp.ErrorCode != want.Code {
			t.Errorf("%s's UnregisterController through node %d (forwarded): %v, %+v; want %v", who, via.id, err, resp, want)
		}
	}
	// An UNKNOWN operation closes the connection there, as Kafka's broker
	// refuses to parse it before it would forward it.
	nc := saslConn(t, via, "admin")
	defer nc.Close()
	createACL.Creations[0].Operation = kmsg.ACLOperationUnknown
	createACL.SetVersion(3)
	if _, err := nc.Write(kmsg.NewRequestFormatter().AppendRequest(nil, createACL, 9)); err != nil {
		t.Fatal(err)
	}
	nc.SetDeadline(time.Now().Add(20 * time.Second))
	if n, err := nc.Read(make([]byte, 4)); !errors.Is(err, io.EOF) {
		t.Errorf("CreateAcls with operation UNKNOWN through node %d: read %d bytes, %v; want the connection closed", via.id, n, err)
	}

	home := kafkaToolsHome(t)
	config := filepath.Join(t.TempDir(), "admin.properties")
	writeFile(t, config, "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"+
		"sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username=\"admin\" password=\"admin-secret\";\n")
	kafkaACLs := func(n *clusterNode, args ...string) string {
		stdout, stderr, err := runKafkaTool(t, home, "", "org.apache.kafka.tools.AclCommand",
			append([]string{"--bootstrap-server", n.addr2, "--command-config", config}, args...)...)
		if err != nil {
			t.Fatalf("kafka-acls %v through node %d: %v\n%s%s", args, n.id, err, stdout, stderr)
		}
		return stdout
	}
	kafkaACLs(via, "--add", "--allow-principal", "User:alice", "--operation", "Write", "--topic", "t")
	if got := eventually("ok", func() string { return produce(other) }); got != "ok" {
		t.Fatalf("alice's produce through node %d after the ACL was added through node %d: %s", other.id, via.id, got)
	}
	if got := produce(ctrl); got != "ok" {
		t.Errorf("alice's produce through node %d, the controller: %s", ctrl.id, got)
	}
	if out := kafkaACLs(other, "--list", "--topic", "t"); !strings.Contains(out, "(principal=User:alice, host=*, operation=WRITE, permissionType=ALLOW)") {
		t.Errorf("kafka-acls --list through node %d:\n%s", other.id, out)
	}
	// kafka-acls --bootstrap-controller lists them from the controllers
	// (PLAINTEXT: User:ANONYMOUS, a super user).
	props, err := os.ReadFile(ctrl.props)
	if err != nil {
		t.Fatal(err)
	}
	voters := regexp.MustCompile(`(?m)^controller\.quorum\.voters=(.*)$`).FindSubmatch(props)
	if voters == nil {
		t.Fatalf("no controller.quorum.voters in %s", ctrl.props)
	}
	var controllers []string
	for _, v := range strings.Split(string(voters[1]), ",") {
		_, addr, _ := strings.Cut(v, "@")
		controllers = append(controllers, addr)
	}
	stdout, stderr, err := runKafkaTool(t, home, "", "org.apache.kafka.tools.AclCommand", "--bootstrap-controller", strings.Join(controllers, ","), "--list", "--topic", "t")
	if err != nil || !strings.Contains(stdout, "(principal=User:alice, host=*, operation=WRITE, permissionType=ALLOW)") {
		t.Errorf("kafka-acls --bootstrap-controller --list: %v\n%s%s", err, stdout, stderr)
	}
}

// startAuthorizerCluster starts a three-node cluster of
// authorizerClusterLines and returns the active controller and the two
// others.
func startAuthorizerCluster(t *testing.T, superUsers string) (ctrl, via, other *clusterNode) {
	nodes := startCluster(t, authorizerClusterLines(superUsers)...)
	waitFormed(t, nodes, 20*time.Second)
	ctrl = activeController(t, nodes)
	for _, n := range nodes {
		switch {
		case n == ctrl:
		case via == nil:
			via = n
		default:
			other = n
		}
	}
	return ctrl, via, other
}

// authorizerClusterLines give startCluster's nodes a SASL_PLAINTEXT
// listener with aclProps' users and the StandardAuthorizer with
// superUsers.
func authorizerClusterLines(superUsers string) []string {
	return []string{
		"listeners=PLAINTEXT://{addr},CONTROLLER://{controller},SASL_PLAINTEXT://{addr2}",
		"advertised.listeners=PLAINTEXT://{addr},CONTROLLER://{controller},SASL_PLAINTEXT://{addr2}",
		"listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
		"sasl.enabled.mechanisms=PLAIN",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config=" + saslJAAS,
		"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users=" + superUsers,
	}
}

// TestClusterNodesNeedClusterAction: with super.users=User:admin alone,
// the nodes' own principal (User:ANONYMOUS over PLAINTEXT) may not
// CLUSTER_ACTION, so the active controller refuses their registrations
// and the Envelopes they forward: admin's CreateTopics through a node that
// is not the controller is CLUSTER_AUTHORIZATION_FAILED, as in Kafka. Once
// admin allows User:ANONYMOUS CLUSTER_ACTION on the cluster (Kafka's
// alternative to super.users), through the controller, the nodes register
// and forwarding works.
func TestClusterNodesNeedClusterAction(t *testing.T) {
	e2e(t)
	nodes := startCluster(t, authorizerClusterLines("User:admin")...)
	ctrl := activeController(t, nodes)
	via := nodes[0]
	if via == ctrl {
		via = nodes[1]
	}
	// NOT_CONTROLLER until the node learns who leads the quorum.
	refused := eventually("CLUSTER_AUTHORIZATION_FAILED", func() string { return outcome(createTopicAt(t, via, "admin", "forwarded")) })
	if refused != "CLUSTER_AUTHORIZATION_FAILED" {
		t.Errorf("admin's CreateTopics through node %d: %s, want CLUSTER_AUTHORIZATION_FAILED", via.id, refused)
	}
	via.p.waitLog(regexp.MustCompile(`the active controller refuses this broker.*CLUSTER_AUTHORIZATION_FAILED`), 20*time.Second)
	if m, err := metadataOf(ctrl.addr); err != nil || len(m.Brokers) != 0 {
		t.Errorf("the controller's Metadata: %v, %v; want no broker registered", m, err)
	}
	grant := kmsg.NewPtrCreateACLsRequest()
	c := kmsg.NewCreateACLsRequestCreation()
	c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceTypeCluster, "kafka-cluster", kmsg.ACLResourcePatternTypeLiteral
	c.Principal, c.Host, c.Operation, c.PermissionType = "User:ANONYMOUS", "*", kmsg.ACLOperationClusterAction, kmsg.ACLPermissionTypeAllow
	grant.Creations = []kmsg.CreateACLsRequestCreation{c}
	if r := saslRequest(t, ctrl, "admin", grant, 3).(*kmsg.CreateACLsResponse); r.Results[0].ErrorCode != 0 {
		t.Fatalf("grant CLUSTER_ACTION through the controller: %v", kerr.ErrorForCode(r.Results[0].ErrorCode))
	}
	waitFormed(t, nodes, 30*time.Second)
	if err := createTopicAt(t, via, "admin", "forwarded"); err != nil {
		t.Errorf("admin's CreateTopics through node %d once the nodes may CLUSTER_ACTION: %v", via.id, err)
	}
}

// saslRequest sends req at version to node n's SASL listener on a
// connection of its own, authenticated as user with PLAIN.
func saslRequest(t *testing.T, n *clusterNode, as string, req kmsg.Request, version int16) kmsg.Response {
	nc := saslConn(t, n, as)
	defer nc.Close()
	return rawRequest(t, nc, req, version, 3)
}

// saslConn is a connection to node n's SASL listener, authenticated as
// user with PLAIN.
func saslConn(t *testing.T, n *clusterNode, as string) net.Conn {
	nc, err := net.DialTimeout("tcp", n.addr2, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Mechanism = "PLAIN"
	if r := rawRequest(t, nc, hs, 1, 1).(*kmsg.SASLHandshakeResponse); r.ErrorCode != 0 {
		t.Fatalf("SASL handshake: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.SASLAuthBytes = []byte("\x00" + as + "\x00" + as + "-secret")
	if r := rawRequest(t, nc, auth, 2, 2).(*kmsg.SASLAuthenticateResponse); r.ErrorCode != 0 {
		t.Fatalf("SASL authenticate as %s: %v", as, kerr.ErrorForCode(r.ErrorCode))
	}
	return nc
}

// createTopicAt sends a CreateTopics of topic as user to node n itself
// (admin clients send it to the node Metadata names as the controller)
// and returns the topic's error.
func createTopicAt(t *testing.T, n *clusterNode, as, topic string) error {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 20000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, 1, 1
	req.Topics = []kmsg.CreateTopicsRequestTopic{rt}
	return kerr.ErrorForCode(saslRequest(t, n, as, req, 7).(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode)
}
