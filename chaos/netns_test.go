package chaos

import (
	"fmt"
	gonet "net"
	"os"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// netnsCluster makes the namespaces of a three-node cluster, removed when
// the test ends (after its nodes are killed: cleanups run last first).
func netnsCluster(t *testing.T) *Netns {
	t.Helper()
	if why := NetnsUnavailable(); why != "" {
		t.Skipf("network partition: %s", why)
	}
	net, err := NewNetns(3)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := net.Close(); err != nil {
			t.Errorf("remove the namespaces: %v", err)
		}
	})
	return net
}

// TestNetnsIsolate: a node cut off by Isolate cannot be reached from a
// peer's namespace while the root namespace still reaches it, and it
// cannot reach the peer; a connection made before the cut carries nothing
// either way (as a follower's fetch connection must not); Heal gives both
// their way back. It runs with the
// cluster runs, not in `make test`: it makes the same namespaces (and so
// removes a running cluster's).
func TestNetnsIsolate(t *testing.T) {
	if os.Getenv("STRATA_CLUSTER") == "" && os.Getenv("STRATA_CHAOS_KAFKA") == "" {
		t.Skip("network namespaces of the cluster runs: set STRATA_CLUSTER=1 or STRATA_CHAOS_KAFKA=1")
	}
	net := netnsCluster(t)
	ln1, _ := listenIn(t, net, 1)
	ln2, _ := listenIn(t, net, 2)
	lnHeld, held := listenIn(t, net, 1)
	var client gonet.Conn
	inNetns(t, net, 2, func() { client, _ = gonet.DialTimeout("tcp", lnHeld.Addr().String(), time.Second) })
	if client == nil {
		t.Fatal("node 2 cannot connect to node 1")
	}
	defer client.Close()
	server := <-held
	defer server.Close()
	if !carries(t, client, server) || !carries(t, server, client) {
		t.Fatal("before the cut: the connection from node 2 to node 1 carries nothing")
	}
	reach := func(from int32, ln gonet.Listener) bool {
		t.Helper()
		return dialFrom(t, net, from, ln.Addr().String())
	}
	if !reach(2, ln1) || !reach(1, ln2) || !reach(0, ln1) {
		t.Fatalf("before the cut: node 2 reaches node 1 %v, node 1 reaches node 2 %v, the root namespace reaches node 1 %v",
			reach(2, ln1), reach(1, ln2), reach(0, ln1))
	}
	if err := net.Isolate(1, []int32{2, 3}); err != nil {
		t.Fatal(err)
	}
	if reach(2, ln1) || reach(1, ln2) {
		t.Errorf("cut off: node 2 reaches node 1 %v, node 1 reaches node 2 %v; want neither", reach(2, ln1), reach(1, ln2))
	}
	if !reach(0, ln1) {
		t.Errorf("cut off: the root namespace no longer reaches node 1")
	}
	if carries(t, client, server) || carries(t, server, client) {
		t.Errorf("cut off: the connection from node 2 to node 1 made before the cut carries node 2's bytes %v, node 1's %v; want neither",
			carries(t, client, server), carries(t, server, client))
	}
	if err := net.Heal(1); err != nil {
		t.Fatal(err)
	}
	if !reach(2, ln1) || !reach(1, ln2) {
		t.Errorf("healed: node 2 reaches node 1 %v, node 1 reaches node 2 %v; want both", reach(2, ln1), reach(1, ln2))
	}
}

// inNetns runs f on a thread switched into node id's namespace (the root
// namespace for id 0); sockets made there stay in it.
func inNetns(t *testing.T, net *Netns, id int32, f func()) {
	t.Helper()
	if id == 0 {
		f()
		return
	}
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine instead of going back switched
		ns, err := os.Open("/run/netns/" + net.Name(id))
		if err != nil {
			done <- err
			return
		}
		defer ns.Close()
		if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
			done <- fmt.Errorf("setns %s: %w", net.Name(id), err)
			return
		}
		f()
		done <- nil
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// listenIn is a listener on node id's address; it hands the first
// connection it accepts to held and closes the others.
func listenIn(t *testing.T, net *Netns, id int32) (gonet.Listener, <-chan gonet.Conn) {
	t.Helper()
	var ln gonet.Listener
	var err error
	inNetns(t, net, id, func() { ln, err = gonet.Listen("tcp", net.Addr(id)+":0") })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	held := make(chan gonet.Conn, 1)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			select {
			case held <- c:
			default:
				c.Close()
			}
		}
	}()
	return ln, held
}

// carries says whether a byte written on from arrives on to within 500 ms.
func carries(t *testing.T, from, to gonet.Conn) bool {
	t.Helper()
	if _, err := from.Write([]byte{1}); err != nil {
		return false
	}
	if err := to.SetReadDeadline(time.Now().Add(500 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	_, err := to.Read(make([]byte, 64))
	return err == nil
}

// dialFrom says whether a connection from node id's namespace to addr is
// made within 500 ms.
func dialFrom(t *testing.T, net *Netns, id int32, addr string) bool {
	t.Helper()
	ok := false
	inNetns(t, net, id, func() {
		c, err := gonet.DialTimeout("tcp", addr, 500*time.Millisecond)
		if err == nil {
			c.Close()
			ok = true
		}
	})
	return ok
}
