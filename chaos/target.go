// Package chaos runs a broker as a real process under a producer and a
// consumer, kills it with SIGKILL at random moments, restarts it on the same
// data directory, and checks the recorded history the way Jepsen's Kafka
// workload (jepsen.tests.kafka) does: lost acknowledged writes, duplicates,
// inconsistent offsets, non-monotonic polls and poll skips.
//
// The same workload runs against Strata (StrataTarget) and, as a control,
// against Apache Kafka in KRaft combined mode (KafkaTarget).
package chaos

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Target is one broker process that can be started, killed and restarted on
// the same data directory and address.
type Target interface {
	Name() string
	Addr() string
	// Start launches the process and returns once it answers Metadata.
	Start(ctx context.Context) error
	// Kill sends SIGKILL and waits for the process to exit.
	Kill() error
	// LogTail is the end of the process output, for failure messages.
	LogTail(n int) string
}

// process is the part of a target shared by Strata and Kafka: a command line,
// an output file appended across restarts, SIGKILL and readiness.
type process struct {
	name    string
	addr    string
	logPath string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

func (p *process) Name() string { return p.name }
func (p *process) Addr() string { return p.addr }

func (p *process) launch(argv []string) error {
	out, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "==== start %s\n", time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		out.Close()
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		out.Close()
		close(done)
	}()
	p.mu.Lock()
	p.cmd, p.done = cmd, done
	p.mu.Unlock()
	return nil
}

// Kill sends SIGKILL to the running process, if any, and waits for it.
func (p *process) Kill() error {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	default:
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	select {
	case <-done:
		return nil
	case <-time.After(30 * time.Second):
		return fmt.Errorf("%s did not exit 30s after SIGKILL", p.name)
	}
}

// Stop sends SIGTERM, for Kafka a controlled shutdown that leaves its clean
// shutdown marker, and waits up to 60 s for the exit.
func (p *process) Stop() error {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return nil
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	select {
	case <-done:
		return nil
	case <-time.After(60 * time.Second):
		return fmt.Errorf("%s still running 60s after SIGTERM", p.name)
	}
}

// Pid is the running process's id, 0 when none runs.
func (p *process) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

func (p *process) LogTail(n int) string {
	data, _ := os.ReadFile(p.logPath)
	if len(data) > n {
		data = data[len(data)-n:]
	}
	return string(data)
}

// waitReady polls Metadata until the broker lists itself, the process exits
// or ctx ends.
func (p *process) waitReady(ctx context.Context) error {
	var last error
	for {
		p.mu.Lock()
		done := p.done
		p.mu.Unlock()
		select {
		case <-done:
			return fmt.Errorf("%s exited before serving: last error %v; output:\n%s", p.name, last, p.LogTail(4000))
		default:
		}
		if last = metadataReady(ctx, p.addr); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready at %s: %v (%w); output:\n%s", p.name, p.addr, last, ctx.Err(), p.LogTail(4000))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func metadataReady(ctx context.Context, addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	c.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return err
	}
	defer cl.Close()
	mctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	m, err := kadm.NewClient(cl).BrokerMetadata(mctx)
	if err != nil {
		return err
	}
	if len(m.Brokers) == 0 {
		return errors.New("no brokers in metadata")
	}
	return nil
}

// FreePort is a port on 127.0.0.1 that no listener holds now and no
// earlier call returned. It is below Linux's ephemeral range (32768-60999)
// and below the range cmd/strata's tests pick from (20000-32767): a port
// the kernel picked for a listener and freed may be the next one it gives
// again, to another node's listener (CI saw node 2's client listener
// refused the port node 1's controller listener held) or to a connection.
func FreePort() (int, error) {
	portsMu.Lock()
	defer portsMu.Unlock()
	for range 1000 {
		port := freePortsFrom + mrand.IntN(freePortsTo-freePortsFrom)
		if portsGiven[port] {
			continue
		}
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue
		}
		ln.Close()
		portsGiven[port] = true
		return port, nil
	}
	return 0, fmt.Errorf("no free port in [%d, %d)", freePortsFrom, freePortsTo)
}

const (
	freePortsFrom = 10000
	freePortsTo   = 20000
)

var (
	portsMu    sync.Mutex
	portsGiven = map[int]bool{}
)

// StrataTarget runs the strata binary.
type StrataTarget struct {
	process
	bin, dataDir string
	args         []string
	// listeners and protocols are the listeners AddListener added, as
	// listeners and listener.security.protocol.map name them.
	listeners, protocols []string
}

// NewStrata prepares a strata process: binary bin, data in dir/data, output
// in dir/strata.log, on a free port; extra are more --override style flags.
func NewStrata(bin, dir string, extra ...string) (*StrataTarget, error) {
	return newStrata(bin, filepath.Join(dir, "strata.log"), filepath.Join(dir, "data"), extra...)
}

func newStrata(bin, logPath, dataDir string, extra ...string) (*StrataTarget, error) {
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	t := &StrataTarget{
		process: process{name: "strata", addr: addr, logPath: logPath},
		bin:     bin,
		dataDir: dataDir,
	}
	t.args = append([]string{
		"--override", "listeners=PLAINTEXT://" + addr,
		"--override", "log.dirs=" + t.dataDir,
		"--override", "group.initial.rebalance.delay.ms=0",
		"--override", "offsets.topic.num.partitions=5",
	}, extra...)
	return t, nil
}

// DataDir is where the broker keeps its logs.
func (t *StrataTarget) DataDir() string { return t.dataDir }

// Start launches strata and waits until it answers Metadata.
func (t *StrataTarget) Start(ctx context.Context) error {
	if err := t.launch(append([]string{t.bin}, t.args...)); err != nil {
		return err
	}
	return t.waitReady(ctx)
}

// KafkaTarget runs Apache Kafka in KRaft combined mode (broker and
// controller in one JVM) from the jars compat-tests/scripts/install-kafka.sh
// installs, configured as compat-tests/cmd/compat starts it.
type KafkaTarget struct {
	process
	home      string // compat-tests/.cache/kafka-4.4.0
	dir       string
	props     string
	formatted bool
	// JVM holds the java options placed before -cp; nil means the chaos
	// defaults (-Xmx512m -XX:+UseSerialGC). bench sets kafka-server-start's.
	JVM []string
}

// NewKafka prepares a Kafka process from home (holding libs/ and
// log4j2.properties) with its data and logs under dir; extra lines are added
// to server.properties.
func NewKafka(home, dir string, extra ...string) (*KafkaTarget, error) {
	if _, err := os.Stat(filepath.Join(home, "libs")); err != nil {
		return nil, fmt.Errorf("kafka not installed in %s (run compat-tests/scripts/install-kafka.sh): %w", home, err)
	}
	kport, err := FreePort()
	if err != nil {
		return nil, err
	}
	cport, err := FreePort()
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(kport))
	props := fmt.Sprintf(`process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:%[2]d
listeners=PLAINTEXT://127.0.0.1:%[1]d,CONTROLLER://127.0.0.1:%[2]d
advertised.listeners=PLAINTEXT://127.0.0.1:%[1]d
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=%[3]s
num.partitions=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=5
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=5
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=true
`, kport, cport, filepath.Join(dir, "data"))
	for _, l := range extra {
		props += l + "\n"
	}
	t := &KafkaTarget{
		process: process{name: "kafka", addr: addr, logPath: filepath.Join(dir, "stdout.log")},
		home:    home,
		dir:     dir,
		props:   filepath.Join(dir, "server.properties"),
	}
	if err := os.WriteFile(t.props, []byte(props), 0o644); err != nil {
		return nil, err
	}
	return t, nil
}

func (t *KafkaTarget) java(main string, args ...string) []string {
	return t.javaWith("log4j2.properties", main, args...)
}

// javaWith is the java command line running main from Kafka's jars with the
// log4j2 configuration log4j of home.
func (t *KafkaTarget) javaWith(log4j, main string, args ...string) []string {
	jvm := t.JVM
	if jvm == nil {
		jvm = []string{"-Xmx512m", "-XX:+UseSerialGC"}
	}
	return append(append(append([]string{"java"}, jvm...),
		"-Dlog4j2.configurationFile="+filepath.Join(t.home, log4j),
		"-Dkafka.logs.file="+filepath.Join(t.dir, "kafka.log"),
		"-cp", filepath.Join(t.home, "libs", "*"), main), args...)
}

// Tool is a command running main from Kafka's jars as its command-line tools
// run: warnings and errors to stderr only (tools-log4j2.properties).
func (t *KafkaTarget) Tool(main string, args ...string) *exec.Cmd {
	argv := t.javaWith("tools-log4j2.properties", main, args...)
	return exec.Command(argv[0], argv[1:]...)
}

// kafkaClusterID is a random ID as Kafka's Uuid.randomUuid makes them:
// base64url of 16 random bytes, drawn again when the text starts with '-',
// which kafka-storage's argument parser would take for an option.
func kafkaClusterID() string {
	for {
		var id [16]byte
		_, _ = rand.Read(id[:])
		if s := base64.RawURLEncoding.EncodeToString(id[:]); s[0] != '-' {
			return s
		}
	}
}

// Start formats the storage on the first call, then launches the JVM and
// waits until the broker answers Metadata.
func (t *KafkaTarget) Start(ctx context.Context) error {
	if !t.formatted {
		argv := t.java("kafka.tools.StorageTool", "format", "-t", kafkaClusterID(), "-c", t.props)
		if out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput(); err != nil {
			return fmt.Errorf("kafka storage format: %w\n%s", err, out)
		}
		t.formatted = true
	}
	if err := t.launch(t.java("kafka.Kafka", t.props)); err != nil {
		return err
	}
	return t.waitReady(ctx)
}
