package quorum

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Voter is one member of the controller quorum: its node id and the
// address its controller listener is reached at.
type Voter struct {
	ID   int32
	Addr string // host:port
}

// ParseVoters parses controller.quorum.voters as Kafka does
// (QuorumConfig.parseVoterConnections): a comma-separated list of
// {id}@{host}:{port}, each id at most once.
func ParseVoters(s string) ([]Voter, error) {
	var out []Voter
	seen := map[int32]bool{}
	for _, entry := range strings.Split(s, ",") {
		entry = strings.TrimSpace(entry)
		idStr, addr, ok := strings.Cut(entry, "@")
		if !ok {
			return nil, fmt.Errorf("controller.quorum.voters: %q is not of the form {id}@{host}:{port}", entry)
		}
		id, err := strconv.ParseInt(idStr, 10, 32)
		if err != nil || id < 0 {
			return nil, fmt.Errorf("controller.quorum.voters: %q: node id %q is not a non-negative integer", entry, idStr)
		}
		host, port, err := net.SplitHostPort(addr)
		if err != nil || host == "" {
			return nil, fmt.Errorf("controller.quorum.voters: %q: address %q is not host:port", entry, addr)
		}
		if p, err := strconv.ParseUint(port, 10, 16); err != nil || p == 0 {
			return nil, fmt.Errorf("controller.quorum.voters: %q: port %q is not in 1..65535", entry, port)
		}
		if seen[int32(id)] {
			return nil, fmt.Errorf("controller.quorum.voters: node id %d appears twice", id)
		}
		seen[int32(id)] = true
		out = append(out, Voter{ID: int32(id), Addr: addr})
	}
	return out, nil
}
