package broker

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strata-io/strata/storage"
)

// lookupPartition returns partition i of t, or nil when either is unknown.
func lookupPartition(t *storage.Topic, i int32) *storage.Partition {
	if t == nil {
		return nil
	}
	ps := t.Partitions()
	if i < 0 || int(i) >= len(ps) {
		return nil
	}
	return ps[i]
}

// checkLeaderEpoch compares the epoch a client believes current with ours:
// -1 skips the check, a newer one means we are behind, an older one that the
// client is.
func checkLeaderEpoch(p *storage.Partition, clientEpoch int32) error {
	ours := p.LeaderEpoch()
	switch {
	case clientEpoch == -1 || clientEpoch == ours:
		return nil
	case clientEpoch > ours:
		return kerr.UnknownLeaderEpoch
	default:
		return kerr.FencedLeaderEpoch
	}
}
