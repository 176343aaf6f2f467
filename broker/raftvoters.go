package broker

// AddRaftVoter (key 80, v0-1) and RemoveRaftVoter (key 81, v0): KIP-853's
// changes to the controller quorum's voters, which kafka-metadata-quorum
// add-controller and remove-controller send, answered by the active
// controller (quorum.Store.AddVoter, RemoveVoter) on its controller
// listener and forwarded to it by a broker (forward.go), as Kafka's
// ControllerApis and KafkaApis do. The new voter is reached at the
// endpoint of its Listeners named by this cluster's controller listener,
// or its first. AckWhenCommitted (v1) false is answered after the change
// was committed all the same: raft's AddVoter returns then.
//
// Where Strata differs: hashicorp/raft has no directory ids, so a voter's
// VoterDirectoryId is not kept (DescribeQuorum reports the zero id) and
// RemoveRaftVoter takes any; UpdateRaftVoter, which a Kafka controller
// sends itself, is not served.

import (
	"errors"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/metadata/quorum"
)

// registerRaftVoters serves the two on a client listener, for the
// forwarding to wrap (a broker-only node never answers them itself).
func (b *Broker) registerRaftVoters() {
	b.apis.add(kmsg.AddRaftVoter, 0, 1, func(rc *reqCtx) (kmsg.Response, error) { return b.controller.handleAddRaftVoter(rc) })
	b.apis.add(kmsg.RemoveRaftVoter, 0, 0, func(rc *reqCtx) (kmsg.Response, error) { return b.controller.handleRemoveRaftVoter(rc) })
}

// voterChangeTimeout bounds a change whose request gives no timeout.
const voterChangeTimeout = 30 * time.Second

// voterCode is the Kafka code of a voter change's error, and its message.
func (c *controller) voterCode(key kmsg.Key, err error) (int16, *string) {
	var code int16
	switch {
	case err == nil:
		return 0, nil
	case errors.Is(err, quorum.ErrDuplicateVoter):
		code = kerr.DuplicateVoter.Code
	case errors.Is(err, quorum.ErrVoterNotFound):
		code = kerr.VoterNotFound.Code
	case errors.Is(err, quorum.ErrCatchUpTimeout):
		code = kerr.RequestTimedOut.Code
	default:
		code = c.errCode(key, err)
	}
	return code, errorMessage(err)
}

// refuseVoterChange is the code refusing a voter change: an unauthorized
// one, or one for another cluster; 0 lets it through.
func (c *controller) refuseVoterChange(rc *reqCtx, clusterID *string) int16 {
	switch {
	case !rc.authorizeCluster(OpAlter):
		return kerr.ClusterAuthorizationFailed.Code
	case clusterID != nil && *clusterID != c.clusterID:
		return kerr.InconsistentClusterID.Code
	}
	return 0
}

func (c *controller) handleAddRaftVoter(rc *reqCtx) (kmsg.Response, error) {
	r := rc.req.Body.(*kmsg.AddRaftVoterRequest)
	resp := kmsg.NewPtrAddRaftVoterResponse()
	switch resp.ErrorCode = c.refuseVoterChange(rc, r.ClusterID); {
	case resp.ErrorCode != 0:
		return resp, nil
	case len(r.Listeners) == 0:
		resp.ErrorCode = kerr.InvalidRequest.Code
		resp.ErrorMessage = kmsg.StringPtr("a voter needs at least one listener")
		return resp, nil
	}
	name, _, _ := strings.Cut(c.cfg.ControllerListener, "://")
	l := r.Listeners[0]
	for _, cand := range r.Listeners {
		if strings.EqualFold(cand.Name, name) {
			l = cand
		}
	}
	timeout := voterChangeTimeout
	if r.TimeoutMillis > 0 {
		timeout = time.Duration(r.TimeoutMillis) * time.Millisecond
	}
	err := c.store.AddVoter(r.VoterID, net.JoinHostPort(l.Host, strconv.Itoa(int(l.Port))), timeout)
	resp.ErrorCode, resp.ErrorMessage = c.voterCode(kmsg.AddRaftVoter, err)
	return resp, nil
}

func (c *controller) handleRemoveRaftVoter(rc *reqCtx) (kmsg.Response, error) {
	r := rc.req.Body.(*kmsg.RemoveRaftVoterRequest)
	resp := kmsg.NewPtrRemoveRaftVoterResponse()
	if resp.ErrorCode = c.refuseVoterChange(rc, r.ClusterID); resp.ErrorCode != 0 {
		return resp, nil
	}
	err := c.store.RemoveVoter(r.VoterID, voterChangeTimeout)
	resp.ErrorCode, resp.ErrorMessage = c.voterCode(kmsg.RemoveRaftVoter, err)
	return resp, nil
}
