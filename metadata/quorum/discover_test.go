package quorum

import (
	"net"
	"slices"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
)

// TestDiscoverVoters asks three controller listeners over TCP who they are:
// while one has not started, it is waited for; once all answer with their
// ids alone, the voters are the bootstrap servers with those ids; a
// listener whose quorum is open names raft's voters, which win; two
// listeners with one id are refused.
func TestDiscoverVoters(t *testing.T) {
	var addrs []string
	var cls []*ControllerListener
	for range 3 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		cl, err := NewControllerListener(ln, ln.Addr().String(), Security{}, zaptest.NewLogger(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cl.Close() })
		addrs = append(addrs, ln.Addr().String())
		cls = append(cls, cl)
	}
	none := func() string { return "" }
	cls[0].ServeIdentity(7, none)
	cls[1].ServeIdentity(3, none)
	voters, waiting, err := DiscoverVoters(addrs, Security{}, time.Second)
	if err != nil || voters != nil || !slices.Equal(waiting, addrs[2:]) {
		t.Fatalf("one listener not answering: voters %v, waiting %v, %v; want it waited for", voters, waiting, err)
	}
	cls[2].ServeIdentity(5, none)
	voters, waiting, err = DiscoverVoters(addrs, Security{}, time.Second)
	want := []Voter{{7, addrs[0]}, {3, addrs[1]}, {5, addrs[2]}}
	if err != nil || len(waiting) != 0 || !slices.Equal(voters, want) {
		t.Fatalf("all answering: voters %v, waiting %v, %v; want %v", voters, waiting, err, want)
	}
	cls[1].ServeIdentity(3, func() string { return "1@a:1,3@b:2" })
	voters, _, err = DiscoverVoters(addrs, Security{}, time.Second)
	if want := []Voter{{1, "a:1"}, {3, "b:2"}}; err != nil || !slices.Equal(voters, want) {
		t.Fatalf("a formed quorum: voters %v, %v; want %v", voters, err, want)
	}
	cls[1].ServeIdentity(7, none)
	if _, _, err := DiscoverVoters(addrs, Security{}, time.Second); err == nil {
		t.Fatal("two controllers with node id 7: no error")
	}
}
