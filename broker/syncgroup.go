package broker

// SyncGroup, versions 0-5.
//
// The leader's assignment is stored with the group metadata in
// __consumer_offsets before any member gets its part; followers wait for
// it on their connection. From v5 the protocol type and name, when given,
// must match the group's (INCONSISTENT_GROUP_PROTOCOL), and are echoed.
// As in Kafka otherwise.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/protocol"
)

func handleSyncGroup(b *Broker, _ *conn, req *protocol.Request) (kmsg.Response, error) {
	return b.groups.SyncGroup(req.Body.(*kmsg.SyncGroupRequest), req.Version, b.shutdown), nil
}
