package quorum

import (
	"bytes"
	"io"
	"net"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/strata-io/strata/metadata"
)

// TestControllerListenerCarriesRaftAndKafka runs three voters over real
// TCP, each on one controller listener, and checks that they elect a
// leader and commit a change through it, while a connection that is not
// raft's reaches the Kafka side of the same port with its bytes intact,
// as the TCP connection itself.
func TestControllerListenerCarriesRaftAndKafka(t *testing.T) {
	var lns []net.Listener
	var voters []Voter
	for i := range 3 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		voters = append(voters, Voter{ID: int32(i + 1), Addr: ln.Addr().String()})
	}
	base := t.TempDir()
	var stores []*Store
	var cls []*ControllerListener
	for i, v := range voters {
		logger := zaptest.NewLogger(t)
		cl, err := NewControllerListener(lns[i], v.Addr, Security{}, logger)
		if err != nil {
			t.Fatal(err)
		}
		cls = append(cls, cl)
		s, err := Open(Config{NodeID: v.ID, Dir: filepath.Join(base, strconv.Itoa(int(v.ID))), Voters: voters,
			Transport: cl.Transport(10*time.Second, logger), Logger: logger, HeartbeatTimeout: 300 * time.Millisecond, ElectionTimeout: 300 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		stores = append(stores, s)
	}
	t.Cleanup(func() {
		for i, s := range stores {
			s.Close()
			cls[i].Close()
		}
	})

	deadline := time.Now().Add(10 * time.Second)
	for {
		var err error
		for _, s := range stores {
			if s.IsLeader() {
				_, err = s.Propose(metadata.RegisterBrokerRecord{BrokerID: 7})
				if err == nil {
					goto committed
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no change committed within 10s: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
committed:
	for _, s := range stores {
		for {
			if _, ok := s.Image().Cluster.Broker(7); ok {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %d never applied the change", s.id)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}

	c, err := net.Dial("tcp", voters[1].Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	frame := []byte{0, 0, 0, 3, 'a', 'b', 'c'}
	if _, err := c.Write(frame); err != nil {
		t.Fatal(err)
	}
	accepted := make(chan net.Conn, 1)
	go func() {
		kc, err := cls[1].Kafka().Accept()
		if err == nil {
			accepted <- kc
		}
	}()
	select {
	case kc := <-accepted:
		defer kc.Close()
		// Peeked, not wrapped: Fetch's sendfile needs the TCP connection.
		if _, ok := kc.(*net.TCPConn); !ok {
			t.Fatalf("the Kafka side got a %T, want the *net.TCPConn itself", kc)
		}
		got := make([]byte, len(frame))
		if _, err := io.ReadFull(kc, got); err != nil || !bytes.Equal(got, frame) {
			t.Fatalf("the Kafka side read %q, %v; want %q", got, err, frame)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the Kafka side accepted no connection")
	}
}
