package chaos

import (
	"context"
	"fmt"
	"hash/crc32"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// SASL between the nodes of a cluster: three combined nodes from the one
// template (clusterProps), its two listeners (PLAINTEXT, the clients' and
// the inter-broker one, and CONTROLLER) both SASL_PLAINTEXT, the nodes
// logging in to each other as admin (PLAIN to the controllers; PLAIN or
// SCRAM-SHA-512 between brokers), StandardAuthorizer with User:admin the
// only super user, so a node connection that did not log in may do
// nothing. The script's steps give the same outcome on Strata
// (TestClusterSASLScript, run by make test) and on Apache Kafka 4.4.0
// (TestKafkaClusterSASLScript, with STRATA_CHAOS_KAFKA=1).

const clusterSASLPlainJAAS = `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret";`

// clusterSASLLines are the server.properties lines both brokers get, with
// mechanism between brokers.
func clusterSASLLines(mechanism string) []string {
	return []string{
		"listener.security.protocol.map=PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
		"sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512",
		"sasl.mechanism.inter.broker.protocol=" + mechanism,
		"sasl.mechanism.controller.protocol=PLAIN",
		"listener.name.plaintext.plain.sasl.jaas.config=" + clusterSASLPlainJAAS,
		`listener.name.plaintext.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="admin-secret";`,
		"listener.name.controller.sasl.enabled.mechanisms=PLAIN",
		"listener.name.controller.plain.sasl.jaas.config=" + clusterSASLPlainJAAS,
		"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users=User:admin",
	}
}

// clusterSASLAdmin is admin's PLAIN login, for every client of the script
// and of the harness.
func clusterSASLAdmin() kgo.Opt {
	return kgo.SASL(plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism())
}

// clusterSASLStep is one step and the outcome both brokers give; scram
// steps run only with SCRAM-SHA-512 between brokers.
type clusterSASLStep struct {
	what, want string
	scram      bool
	run        func(r *clusterSASLRun) string
}

// clusterSASLRun is the script's state on one cluster.
type clusterSASLRun struct {
	t         *testing.T
	c         *Cluster
	mechanism string
	via       int32 // a broker that is not the active controller
}

// scramSteps says the run takes the steps of a cluster whose brokers log
// in over SCRAM-SHA-512 before admin's credential exists; not when
// Kafka's storage was formatted with it (--add-scram).
func scramSteps(mechanism string, formattedWith bool) bool {
	return mechanism == "SCRAM-SHA-512" && !formattedWith
}

var clusterSASLSteps = []clusterSASLStep{
	{what: "admin lists the brokers", want: "brokers [1 2 3]", run: func(r *clusterSASLRun) string {
		return r.brokers()
	}},
	{what: "admin creates t (RF 3, min.insync.replicas=3) through a node that is not the active controller", want: "ok",
		run: func(r *clusterSASLRun) string { return r.createTopic() }},
	{what: "acks=all produce to t before admin has a SCRAM-SHA-512 credential", want: "REQUEST_TIMED_OUT", scram: true,
		run: func(r *clusterSASLRun) string { return r.produceServed() }},
	{what: "each follower logs its failed login", want: "logged", scram: true, run: func(r *clusterSASLRun) string {
		return r.followersLogFailedLogin()
	}},
	{what: "admin adds its SCRAM-SHA-512 credential with AlterUserScramCredentials", want: "ok", scram: true,
		run: func(r *clusterSASLRun) string { return r.addSCRAM() }},
	{what: "acks=all produce to t", want: "ok", run: func(r *clusterSASLRun) string { return r.produceUntilOK() }},
	{what: "t's ISR", want: "isr [1 2 3]", run: func(r *clusterSASLRun) string { return r.isr() }},
}

func (r *clusterSASLRun) client(opts ...kgo.Opt) *kgo.Client {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(r.c.Bootstrap()...), clusterSASLAdmin(), kgo.DialTimeout(5 * time.Second)}, opts...)...)
	if err != nil {
		r.t.Fatal(err)
	}
	return cl
}

// brokers waits up to 30 s for a new client (a client caches metadata) to
// list the three brokers, and returns what it last listed.
func (r *clusterSASLRun) brokers() string {
	seen := ""
	_ = waitFor(context.Background(), 30*time.Second, "three brokers", func(ctx context.Context) (bool, string) {
		cl := r.client()
		defer cl.Close()
		m, err := kadm.NewClient(cl).BrokerMetadata(ctx)
		if err != nil {
			seen = clientOutcome(err)
			return false, seen
		}
		ids := m.Brokers.NodeIDs()
		slices.Sort(ids)
		seen = fmt.Sprint("brokers ", ids)
		return len(ids) == 3, seen
	})
	return seen
}

// createTopic sends CreateTopics to r.via itself, which must forward it to
// the active controller (a client would send it where Metadata names the
// controller).
func (r *clusterSASLRun) createTopic() string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if leader := r.c.QuorumLeader(ctx); leader == r.via || leader < 0 {
		return fmt.Sprintf("node %d is the active controller (%d)", r.via, leader)
	}
	cl := r.client(kgo.SeedBrokers(r.c.Addr(r.via)))
	defer cl.Close()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 20000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "t", 1, 3
	cfg := kmsg.NewCreateTopicsRequestTopicConfig()
	cfg.Name, cfg.Value = "min.insync.replicas", kmsg.StringPtr("3")
	rt.Configs = append(rt.Configs, cfg)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl.SeedBrokers()[0])
	if err != nil {
		return clientOutcome(err)
	}
	if len(resp.Topics) != 1 {
		return fmt.Sprintf("%d topics answered", len(resp.Topics))
	}
	return clientOutcome(kerr.ErrorForCode(resp.Topics[0].ErrorCode))
}

// produce is one acks=all Produce request (3 s timeout) of one record to
// t's leader, as r.via's Metadata names it: its partition's error, "ok"
// when none.
func (r *clusterSASLRun) produce() string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := metadataOf(ctx, r.c.Addr(r.via), []string{"t"}, clusterSASLAdmin())
	if err != nil {
		return saslOutcome(err)
	}
	if len(m.Topics) != 1 || len(m.Topics[0].Partitions) != 1 {
		return partitionUnknown
	}
	if err := kerr.ErrorForCode(m.Topics[0].ErrorCode); err != nil {
		return clientOutcome(err)
	}
	leader := m.Topics[0].Partitions[0].Leader
	if leader < 0 {
		return "LEADER_NOT_AVAILABLE"
	}
	cl := r.client(kgo.SeedBrokers(r.c.Addr(leader)))
	defer cl.Close()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 3000
	// Produce v13 names the topic by its id, earlier versions by name.
	req.Topics = []kmsg.ProduceRequestTopic{{Topic: "t", TopicID: m.Topics[0].TopicID, Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: oneRecordBatch("v")}}}}
	resp, err := req.RequestWith(ctx, cl.SeedBrokers()[0])
	if err != nil {
		return saslOutcome(err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return fmt.Sprintf("%d topics answered", len(resp.Topics))
	}
	return clientOutcome(kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode))
}

// oneRecordBatch is a v2 record batch of one record of value v, with no
// producer id.
func oneRecordBatch(v string) []byte {
	now := time.Now().UnixMilli()
	rec := kmsg.NewRecord()
	rec.Value = []byte(v)
	rec.Length = int32(len(rec.AppendTo(nil)) - 1)
	b := kmsg.NewRecordBatch()
	b.Magic, b.ProducerID, b.ProducerEpoch, b.FirstSequence = 2, -1, -1, -1
	b.FirstTimestamp, b.MaxTimestamp = now, now
	b.NumRecords, b.Records = 1, rec.AppendTo(nil)
	b.Length = int32(len(b.AppendTo(nil)) - 12)
	raw := b.AppendTo(nil)
	b.CRC = int32(crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b.AppendTo(nil)
}

// saslOutcome is clientOutcome with what the client said when no Kafka
// error came back.
func saslOutcome(err error) string {
	if out := clientOutcome(err); out != "refused" {
		return out
	}
	return "no Kafka error: " + err.Error()
}

// partitionUnknown is produce's outcome while r.via's Metadata does not
// list t's partition yet (Kafka's, just after CreateTopics, can list t with
// none).
const partitionUnknown = "t's partition not in Metadata yet"

// notServedYet is an outcome of a partition whose leader does not serve it
// yet.
func notServedYet(outcome string) bool {
	return outcome == partitionUnknown || outcome == "UNKNOWN_TOPIC_OR_PARTITION" || outcome == "NOT_LEADER_FOR_PARTITION" || outcome == "LEADER_NOT_AVAILABLE"
}

// produceServed is the first acks=all write's outcome once t's leader
// serves it (up to 20 s).
func (r *clusterSASLRun) produceServed() string {
	got := r.produce()
	for deadline := time.Now().Add(20 * time.Second); notServedYet(got) && time.Now().Before(deadline); got = r.produce() {
		time.Sleep(200 * time.Millisecond)
	}
	return got
}

// produceUntilOK writes until a write is acknowledged, for up to 60 s
// (followers back off after a failed login), and returns the last
// outcome.
func (r *clusterSASLRun) produceUntilOK() string {
	got := r.produce()
	for deadline := time.Now().Add(60 * time.Second); got != "ok" && time.Now().Before(deadline); got = r.produce() {
		r.t.Logf("%s: acks=all produce: %s", r.c.Name(), got)
		time.Sleep(500 * time.Millisecond)
	}
	return got
}

// followersLogFailedLogin waits up to 10 s for the log of each follower
// of t to say its login to the leader failed, as Kafka's replica fetcher
// logs it: "Connection to node 2 (...) failed authentication due to:
// Authentication failed during authentication due to invalid credentials
// with SASL mechanism SCRAM-SHA-512". (Only followers dial the leader's
// inter-broker listener; the nodes' controller logins are PLAIN.)
func (r *clusterSASLRun) followersLogFailedLogin() string {
	err := waitFor(context.Background(), 10*time.Second, "each follower logging its failed login", func(ctx context.Context) (bool, string) {
		leader, err := r.c.LeaderOf(ctx, "t", 0)
		if err != nil {
			return false, err.Error()
		}
		for _, id := range r.c.IDs() {
			if id == leader {
				continue
			}
			logged := false
			for _, l := range strings.Split(r.c.LogTail(id, 1<<20), "\n") {
				if strings.Contains(l, "failed authentication") {
					r.t.Logf("%s node %d: %s", r.c.Name(), id, l)
					logged = true
					break
				}
			}
			if !logged {
				return false, fmt.Sprintf("follower %d logged none (leader %d)", id, leader)
			}
		}
		return true, ""
	})
	if err != nil {
		return err.Error()
	}
	return "logged"
}

func (r *clusterSASLRun) addSCRAM() string {
	cl := r.client()
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := kadm.NewClient(cl).AlterUserSCRAMs(ctx, nil,
		[]kadm.UpsertSCRAM{{User: "admin", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "admin-secret"}})
	if err == nil {
		err = res.Error()
	}
	return clientOutcome(err)
}

// isr waits up to 30 s for every broker to report t's ISR full and returns
// the ISR last seen.
func (r *clusterSASLRun) isr() string {
	ps, err := r.c.ISRFull(context.Background(), 30*time.Second, "t")
	if err != nil {
		return err.Error()
	}
	return fmt.Sprint("isr ", ps[0].ISR)
}

// runClusterSASLScript starts c, runs every step for mechanism between
// brokers and returns what each gave ("" for a step skipped).
func runClusterSASLScript(t *testing.T, c *Cluster, mechanism string, addedAtFormat bool) []string {
	t.Helper()
	start := time.Now()
	startCluster(t, c)
	t.Logf("%s over %s: cluster started in %v", c.Name(), mechanism, time.Since(start).Round(100*time.Millisecond))
	r := &clusterSASLRun{t: t, c: c, mechanism: mechanism, via: 1}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	if c.QuorumLeader(ctx) == 1 {
		r.via = 2
	}
	cancel()
	got := make([]string, len(clusterSASLSteps))
	for i, step := range clusterSASLSteps {
		if step.scram && !scramSteps(mechanism, addedAtFormat) {
			continue
		}
		begin := time.Now()
		got[i] = step.run(r)
		t.Logf("%s over %s, step %d, %s: %s (%v)", c.Name(), mechanism, i+1, step.what, got[i], time.Since(begin).Round(100*time.Millisecond))
	}
	for _, id := range c.IDs() {
		if strings.Contains(c.LogTail(id, 1<<20), "CLUSTER_AUTHORIZATION_FAILED") {
			t.Logf("%s node %d logged CLUSTER_AUTHORIZATION_FAILED", c.Name(), id)
		}
	}
	return got
}

func checkClusterSASLScript(t *testing.T, name, mechanism string, addedAtFormat bool, got []string) {
	t.Helper()
	for i, step := range clusterSASLSteps {
		if step.scram && !scramSteps(mechanism, addedAtFormat) {
			continue
		}
		if got[i] != step.want {
			t.Errorf("%s over %s, step %d (%s): %s, want %s", name, mechanism, i+1, step.what, got[i], step.want)
		}
	}
}

func clusterSASLConfig(t *testing.T, mechanism string) ClusterConfig {
	return ClusterConfig{Dir: t.TempDir(), Extra: clusterSASLLines(mechanism), ClientOpts: []kgo.Opt{clusterSASLAdmin()}}
}

// TestClusterSASLScript runs the script on three Strata nodes.
func TestClusterSASLScript(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three strata nodes per mechanism")
	}
	bin := buildStrata(t)
	for _, mechanism := range []string{"PLAIN", "SCRAM-SHA-512"} {
		t.Run(mechanism, func(t *testing.T) {
			c, err := NewStrataCluster(bin, clusterSASLConfig(t, mechanism))
			if err != nil {
				t.Fatal(err)
			}
			checkClusterSASLScript(t, "strata", mechanism, false, runClusterSASLScript(t, c, mechanism, false))
		})
	}
}

// TestKafkaClusterSASLScript runs it on three Apache Kafka 4.4.0 nodes,
// formatted as the harness formats them (no --add-scram), when
// STRATA_CHAOS_KAFKA=1; then over SCRAM-SHA-512 on nodes formatted with
// admin's credential (--add-scram), where the SCRAM steps do not apply:
// the followers log in from the start.
func TestKafkaClusterSASLScript(t *testing.T) {
	if os.Getenv("STRATA_CHAOS_KAFKA") == "" {
		t.Skip("Apache Kafka cluster control: set STRATA_CHAOS_KAFKA=1 to run it")
	}
	for _, run := range []struct {
		name, mechanism string
		addScram        bool
	}{{"PLAIN", "PLAIN", false}, {"SCRAM-SHA-512", "SCRAM-SHA-512", false}, {"SCRAM-SHA-512-add-scram", "SCRAM-SHA-512", true}} {
		t.Run(run.name, func(t *testing.T) {
			cfg := clusterSASLConfig(t, run.mechanism)
			if run.addScram {
				cfg.KafkaFormat = []string{"--add-scram", "SCRAM-SHA-512=[name=admin,password=admin-secret]"}
			}
			c := kafkaClusterWith(t, cfg)
			checkClusterSASLScript(t, "kafka", run.mechanism, run.addScram, runClusterSASLScript(t, c, run.mechanism, run.addScram))
		})
	}
}
