package chaos

// Network namespaces for the cluster harness: each node runs in its own
// namespace (netnsPrefix-<id>) on its own address 10.77.0.<id>/24, joined to
// the others by a veth pair on a bridge (netnsPrefix-br, 10.77.0.254) in
// the root namespace, where the test's clients run. A node can then be cut
// off from the other nodes while clients still reach it, which 127.0.0.1
// ports cannot show.
//
// The cut is two policy-routing rules per peer inside the node's namespace
// (`ip rule add from <peer> blackhole`, `ip rule add to <peer> blackhole`),
// ahead of the local table's rule (moved from 0 to netnsLocalPref when the
// namespace is made): packets from the peer are dropped on input and
// packets to it have no route, on connections made before the cut too, for
// every port (client and controller listeners alike), and the bridge
// address (clients) stays reachable. iproute2 is all it needs; iptables and
// nft are not installed on the machines this runs on.

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
)

const (
	netnsPrefix = "stnp"
	netnsSubnet = "10.77.0."
	netnsBridge = netnsPrefix + "-br"
	// netnsRulePref numbers the blackhole rules: netnsRulePref+peer for
	// "from", netnsRulePref+100+peer for "to"; netnsLocalPref is the local
	// table's rule, after them.
	netnsRulePref  = 100
	netnsLocalPref = 1000
)

// Netns is the namespaces, veth pairs and bridge of one cluster's nodes.
type Netns struct {
	nodes int

	mu       sync.Mutex
	isolated map[int32][]int32 // node -> peers cut off
}

// NetnsUnavailable says why network namespaces cannot be made here, "" when
// they can: it needs root and iproute2's `ip netns`.
func NetnsUnavailable() string {
	if os.Geteuid() != 0 {
		return "network namespaces need root"
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return "iproute2's ip is not installed"
	}
	if out, err := exec.Command("ip", "netns", "list").CombinedOutput(); err != nil {
		return fmt.Sprintf("ip netns unavailable: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return ""
}

// NewNetns removes what an earlier run left (namespaces and links named
// netnsPrefix-*) and makes the bridge and one namespace per node, 1 to
// nodes.
func NewNetns(nodes int) (*Netns, error) {
	if nodes < 1 || nodes > 250 {
		return nil, fmt.Errorf("netns: %d nodes, want 1 to 250", nodes)
	}
	if err := removeStaleNetns(); err != nil {
		return nil, err
	}
	n := &Netns{nodes: nodes, isolated: map[int32][]int32{}}
	steps := [][]string{
		{"link", "add", netnsBridge, "type", "bridge"},
		{"addr", "add", netnsSubnet + "254/24", "dev", netnsBridge},
		{"link", "set", netnsBridge, "up"},
	}
	for id := int32(1); id <= int32(nodes); id++ {
		ns, host, peer := n.Name(id), n.hostEnd(id), n.nodeEnd(id)
		steps = append(steps,
			[]string{"netns", "add", ns},
			[]string{"link", "add", host, "type", "veth", "peer", "name", peer},
			[]string{"link", "set", peer, "netns", ns},
			[]string{"link", "set", host, "master", netnsBridge, "up"},
			[]string{"-n", ns, "addr", "add", n.Addr(id) + "/24", "dev", peer},
			[]string{"-n", ns, "link", "set", peer, "up"},
			[]string{"-n", ns, "link", "set", "lo", "up"},
			// The local table's rule goes after the cut's rules (it is
			// first, at 0, by default), or packets to this node's own
			// address would never meet a "from <peer>" rule.
			[]string{"-n", ns, "rule", "add", "pref", fmt.Sprint(netnsLocalPref), "lookup", "local"},
			[]string{"-n", ns, "rule", "del", "pref", "0"},
		)
	}
	for _, s := range steps {
		if err := ipCmd(s...); err != nil {
			return nil, errors.Join(err, n.Close())
		}
	}
	return n, nil
}

// removeStaleNetns deletes every namespace and root-namespace link named
// netnsPrefix-*: a crashed run's leftovers (a veth whose namespace still
// has a process in it outlives `ip netns del`, so links go by name too).
func removeStaleNetns() error {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		return fmt.Errorf("ip netns list: %w", err)
	}
	var errs []error
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) > 0 && strings.HasPrefix(f[0], netnsPrefix+"-") {
			errs = append(errs, ipCmd("netns", "del", f[0]))
		}
	}
	out, err = exec.Command("ip", "-o", "link", "show").Output()
	if err != nil {
		return fmt.Errorf("ip link show: %w", err)
	}
	for _, l := range strings.Split(string(out), "\n") {
		// "12: stnp-v1@if11: <...>"
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
		// Deleting one end of a veth pair deletes the other.
		if strings.HasPrefix(name, netnsPrefix+"-") {
			if err := ipCmd("link", "del", name); err != nil && linkExists(name) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// Close removes the namespaces, their veth pairs and the bridge; the
// nodes' processes must have exited.
func (n *Netns) Close() error {
	var errs []error
	for id := int32(1); id <= int32(n.nodes); id++ {
		if netnsExists(n.Name(id)) {
			errs = append(errs, ipCmd("netns", "del", n.Name(id)))
		}
		// The namespace's end going takes the pair with it, not always at
		// once: only a link still there is an error.
		if err := ipCmd("link", "del", n.hostEnd(id)); err != nil && linkExists(n.hostEnd(id)) {
			errs = append(errs, err)
		}
	}
	if err := ipCmd("link", "del", netnsBridge); err != nil && linkExists(netnsBridge) {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Name is node id's namespace.
func (n *Netns) Name(id int32) string { return fmt.Sprintf("%s-%d", netnsPrefix, id) }

// Addr is node id's address inside its namespace.
func (n *Netns) Addr(id int32) string { return fmt.Sprintf("%s%d", netnsSubnet, id) }

func (n *Netns) hostEnd(id int32) string { return fmt.Sprintf("%s-v%d", netnsPrefix, id) }

// nodeEnd is the veth end inside node id's namespace.
func (n *Netns) nodeEnd(id int32) string { return fmt.Sprintf("%s-p%d", netnsPrefix, id) }

// Exec is argv run inside node id's namespace.
func (n *Netns) Exec(id int32, argv []string) []string {
	return append([]string{"ip", "netns", "exec", n.Name(id)}, argv...)
}

// Isolate cuts node id off from peers: inside its namespace every packet
// from or to a peer's address is dropped, on connections made before the
// cut too. The root namespace (clients) still reaches it.
func (n *Netns) Isolate(id int32, peers []int32) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.isolated[id]) > 0 {
		return fmt.Errorf("netns: node %d is already isolated from %v", id, n.isolated[id])
	}
	n.isolated[id] = peers
	for _, p := range peers {
		for _, r := range [][]string{
			{"-n", n.Name(id), "rule", "add", "from", n.Addr(p) + "/32", "blackhole", "pref", fmt.Sprint(netnsRulePref + p)},
			{"-n", n.Name(id), "rule", "add", "to", n.Addr(p) + "/32", "blackhole", "pref", fmt.Sprint(netnsRulePref + 100 + p)},
		} {
			if err := ipCmd(r...); err != nil {
				return errors.Join(err, n.healLocked(id))
			}
		}
	}
	return nil
}

// Heal removes node id's cut, if any.
func (n *Netns) Heal(id int32) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.healLocked(id)
}

func (n *Netns) healLocked(id int32) error {
	peers, ok := n.isolated[id]
	if !ok {
		return nil
	}
	delete(n.isolated, id)
	var errs []error
	for _, p := range peers {
		for _, pref := range []int32{netnsRulePref + p, netnsRulePref + 100 + p} {
			out, err := exec.Command("ip", "-n", n.Name(id), "rule", "del", "pref", fmt.Sprint(pref)).CombinedOutput()
			if err != nil && !strings.Contains(string(out), "No such file") {
				errs = append(errs, fmt.Errorf("ip -n %s rule del pref %d: %w: %s", n.Name(id), pref, err, strings.TrimSpace(string(out))))
			}
		}
	}
	return errors.Join(errs...)
}

func netnsExists(name string) bool {
	_, err := os.Stat("/run/netns/" + name)
	return err == nil
}

func linkExists(name string) bool {
	return exec.Command("ip", "link", "show", "dev", name).Run() == nil
}

func ipCmd(args ...string) error {
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
