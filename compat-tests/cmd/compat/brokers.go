package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/strata-io/strata/compat-tests/runners/rt"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

type broker struct {
	name    string // "strata" or "kafka"
	addr    string
	dir     string // temp dir (removed on exit)
	dataDir string // where the partition directories live
	cmd     *exec.Cmd
	log     string
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// launch starts argv in its own process group with output to b.log and registers the stop.
func (h *harness) launch(b *broker, env []string, argv ...string) error {
	f, err := os.Create(b.log)
	if err != nil {
		return err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = b.dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		return err
	}
	b.cmd = cmd
	exited := make(chan struct{})
	go func() { cmd.Wait(); f.Close(); close(exited) }()
	h.atExit(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		// Keep the broker's log next to the run's logs.
		if data, err := os.ReadFile(b.log); err == nil {
			os.WriteFile(filepath.Join(h.logDir, b.name+"-broker.log"), data, 0o644)
		}
		if b.name == "kafka" {
			if data, err := os.ReadFile(filepath.Join(b.dir, "kafka.log")); err == nil {
				os.WriteFile(filepath.Join(h.logDir, "kafka-server.log"), data, 0o644)
			}
		}
	})
	return nil
}

func (h *harness) tempDir(name string) (string, error) {
	dir, err := os.MkdirTemp("", "compat-"+name+"-")
	if err != nil {
		return "", err
	}
	h.atExit(func() {
		if h.keep {
			fmt.Printf("compat: kept %s\n", dir)
			return
		}
		os.RemoveAll(dir)
	})
	return dir, nil
}

// serverProperties is the one configuration both brokers run with: a KRaft
// combined node on 127.0.0.1, as a stock Kafka setup has it, with the suite's
// group and internal-topic settings.
func serverProperties(port, controllerPort int, dataDir string) string {
	return fmt.Sprintf(`process.roles=broker,controller
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
`, port, controllerPort, dataDir)
}

// newBroker picks the ports of a broker and writes its server.properties (see
// serverProperties) into a fresh temporary directory.
func (h *harness) newBroker(name, log string) (b *broker, propsPath string, err error) {
	port, err := freePort()
	if err != nil {
		return nil, "", err
	}
	controllerPort, err := freePort()
	if err != nil {
		return nil, "", err
	}
	dir, err := h.tempDir(name)
	if err != nil {
		return nil, "", err
	}
	b = &broker{name: name, addr: fmt.Sprintf("127.0.0.1:%d", port), dir: dir, dataDir: filepath.Join(dir, "data"), log: filepath.Join(dir, log)}
	propsPath = filepath.Join(dir, "server.properties")
	if err := os.WriteFile(propsPath, []byte(serverProperties(port, controllerPort, b.dataDir)), 0o644); err != nil {
		return nil, "", err
	}
	return b, propsPath, nil
}

func (h *harness) startStrata() (*broker, error) {
	b, propsPath, err := h.newBroker("strata", "strata.log")
	if err != nil {
		return nil, err
	}
	if err := h.launch(b, nil, filepath.Join(h.root, ".cache/bin/strata"), "--config", propsPath); err != nil {
		return nil, err
	}
	return b, h.waitReady(b, 30*time.Second)
}

func (h *harness) startKafka() (*broker, error) {
	b, propsPath, err := h.newBroker("kafka", "stdout.log")
	if err != nil {
		return nil, err
	}
	dir := b.dir
	// Kafka's Uuid.randomUuid draws again when the text starts with '-',
	// which kafka-storage's argument parser would take for an option.
	var cid string
	for cid == "" || cid[0] == '-' {
		var id [16]byte
		rand.Read(id[:])
		cid = base64.RawURLEncoding.EncodeToString(id[:])
	}
	libs := filepath.Join(h.root, ".cache/kafka/libs/*")
	jopts := []string{"-Xmx512m", "-XX:+UseSerialGC", "-Dlog4j2.configurationFile=" + filepath.Join(h.root, ".cache/kafka/log4j2.properties"),
		"-Dkafka.logs.file=" + filepath.Join(dir, "kafka.log")}
	format := append(append([]string{"java"}, jopts...), "-cp", libs, "kafka.tools.StorageTool", "format", "-t", cid, "-c", propsPath)
	if err := h.command("kafka-format", dir, nil, format...); err != nil {
		return nil, err
	}
	if err := h.launch(b, nil, append(append([]string{"java"}, jopts...), "-cp", libs, "kafka.Kafka", propsPath)...); err != nil {
		return nil, err
	}
	return b, h.waitReady(b, 90*time.Second)
}

// waitReady polls Metadata until the broker lists itself, or the deadline.
func (h *harness) waitReady(b *broker, d time.Duration) error {
	deadline := time.Now().Add(d)
	var last error
	for time.Now().Before(deadline) {
		if b.cmd.ProcessState != nil {
			break
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr))
		if err == nil {
			var m kadm.Metadata
			m, err = kadm.NewClient(cl).Metadata(ctx)
			cl.Close()
			if err == nil && len(m.Brokers) > 0 {
				cancel()
				return nil
			}
			if err == nil {
				err = errors.New("no brokers in metadata")
			}
		}
		cancel()
		last = err
		time.Sleep(300 * time.Millisecond)
	}
	data, _ := os.ReadFile(b.log)
	return fmt.Errorf("%s at %s not ready after %s (%v); log: %s", b.name, b.addr, d, last, tailStr(string(data), 800))
}

// createTopic creates topic with franz-go (an existing one is fine) and waits until it is ready.
func createTopic(addr, topic string, parts int32, rf int16) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, err := adm.CreateTopic(ctx, parts, rf, nil, topic)
	if err != nil {
		return err
	}
	if r.Err != nil && !errors.Is(r.Err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("%v %s", r.Err, r.ErrMessage)
	}
	return rt.WaitReadyKadm(ctx, adm, topic, int(parts))
}

// readAll reads n records of a 1-partition topic from the start with franz-go.
func readAll(addr, topic string, n int) ([]rt.Rec, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var out []rt.Rec
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return out, fmt.Errorf("franz-go read %d of %d records", len(out), n)
		}
		fs.EachRecord(func(r *kgo.Record) {
			x := rt.Rec{Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value}
			for _, hd := range r.Headers {
				x.Headers = append(x.Headers, [2][]byte{[]byte(hd.Key), hd.Value})
			}
			out = append(out, x)
		})
	}
	return out, nil
}

var _ = strings.TrimSpace
