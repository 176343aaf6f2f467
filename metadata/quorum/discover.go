package quorum

// Discovering the voters. A Kafka controller whose server.properties
// names its quorum only by controller.quorum.bootstrap.servers learns the
// voters from its format step (kafka-storage format --initial-controllers);
// Strata has none. Instead, a node with the controller role answers, on
// its controller listener, a connection that opens with identityMagic with
// its node id and, once its quorum is open, the voters of raft's
// configuration (Identity). A node whose voters are not known asks each
// bootstrap server (AskIdentity): when one names the voters of a formed
// quorum, those are the voters; when every one has answered with its id
// alone, the voters are the bootstrap servers with those ids, the same set
// on every node, as if each had been formatted with them as its initial
// controllers. The set is kept in the metadata dir (VotersFile), so a
// restarted node does not ask again.

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// identityMagic opens a connection that asks a controller who it is.
var identityMagic = [4]byte{0xff, 'S', 'I', 'D'}

// VotersFile is where, in the metadata dir, a node keeps the voters it
// discovered.
const VotersFile = "bootstrap-voters"

// Identity is a controller's answer to AskIdentity.
type Identity struct {
	NodeID int32 `json:"node_id"`
	// Voters are raft's, {id}@{host}:{port},...; empty while this node's
	// quorum is not open (it is discovering its voters too).
	Voters string `json:"voters,omitempty"`
}

// ServeIdentity has the listener answer AskIdentity with this node's id
// and voters() (called per question, "" before the quorum is open).
func (l *ControllerListener) ServeIdentity(nodeID int32, voters func() string) {
	l.identity.Store(&identityServer{id: nodeID, voters: voters})
}

type identityServer struct {
	id     int32
	voters func() string
}

// answerIdentity writes this node's Identity on c and closes it.
func (l *ControllerListener) answerIdentity(c net.Conn) {
	defer c.Close()
	srv := l.identity.Load()
	if srv == nil {
		return
	}
	c.SetWriteDeadline(time.Now().Add(sniffTimeout))
	line, err := json.Marshal(Identity{NodeID: srv.id, Voters: srv.voters()})
	if err == nil {
		c.Write(append(line, '\n'))
	}
}

// AskIdentity asks the controller listener at addr who it is, with TLS
// when dial is set.
func AskIdentity(addr string, sec Security, timeout time.Duration) (Identity, error) {
	var id Identity
	c, err := sec.dial(addr, identityMagic, timeout)
	if err != nil {
		return id, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(timeout))
	line, err := bufio.NewReader(c).ReadBytes('\n')
	if err != nil {
		return id, fmt.Errorf("controller %s: no identity: %w", addr, err)
	}
	if err := json.Unmarshal(line, &id); err != nil {
		return id, fmt.Errorf("controller %s: identity %q: %w", addr, line, err)
	}
	return id, nil
}

// DiscoverVoters asks each of bootstrap once (AskIdentity) and returns the
// voters when it can tell them: a formed quorum's, or every bootstrap
// server with its id. waiting lists the servers that did not answer.
func DiscoverVoters(bootstrap []string, sec Security, timeout time.Duration) (voters []Voter, waiting []string, err error) {
	var found []Voter
	for _, addr := range bootstrap {
		id, err := AskIdentity(addr, sec, timeout)
		switch {
		case err != nil:
			waiting = append(waiting, addr)
		case id.Voters != "":
			voters, err := ParseVoters(id.Voters)
			return voters, nil, err
		default:
			found = append(found, Voter{ID: id.NodeID, Addr: addr})
		}
	}
	if len(waiting) > 0 {
		return nil, waiting, nil
	}
	seen := map[int32]string{}
	for _, v := range found {
		if other, dup := seen[v.ID]; dup {
			return nil, nil, fmt.Errorf("controllers %s and %s both have node id %d", other, v.Addr, v.ID)
		}
		seen[v.ID] = v.Addr
	}
	return found, nil, nil
}

// LoadVoters reads the voters a node discovered before from its metadata
// dir; ok is false when it has none.
func LoadVoters(dir string) (voters []Voter, ok bool, err error) {
	b, err := os.ReadFile(filepath.Join(dir, VotersFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read %s: %w", VotersFile, err)
	}
	voters, err = ParseVoters(strings.TrimSpace(string(b)))
	if err != nil {
		return nil, false, fmt.Errorf("%s in %s: %w", VotersFile, dir, err)
	}
	return voters, true, nil
}

// SaveVoters keeps the voters a node discovered in its metadata dir,
// written to a temporary file and renamed, so a crash leaves the old file
// or the new one.
func SaveVoters(dir string, voters []Voter) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp := filepath.Join(dir, VotersFile+".tmp")
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	_, err = f.WriteString(FormatVoters(voters) + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	return os.Rename(tmp, filepath.Join(dir, VotersFile))
}

// FormatVoters is voters in controller.quorum.voters' form.
func FormatVoters(voters []Voter) string {
	out := make([]string, len(voters))
	for i, v := range voters {
		out[i] = fmt.Sprintf("%d@%s", v.ID, v.Addr)
	}
	return strings.Join(out, ",")
}
