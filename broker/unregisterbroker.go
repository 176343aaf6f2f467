package broker

// UnregisterBroker (key 64, v0), what kafka-cluster unregister sends: the
// active controller removes a broker's registration, as Kafka's
// ReplicationControlManager.unregisterBroker does: the partitions it leads
// or is in the ISR of change as when it is fenced (fenceChanges), then an
// UnregisterBrokerRecord; a broker not registered is
// BROKER_ID_NOT_REGISTERED. A broker forwards it (forward.go). Where
// Strata differs: a broker-only node is also taken out of the quorum's
// raft configuration, where its registration had put it as an observer,
// so the leader stops sending it the log; if it is still running, its
// next heartbeat registers it again, as in Kafka, and that puts it back.

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/strata-io/strata/metadata"
)

// registerUnregisterBroker serves it on a client listener, for the
// forwarding to wrap.
func (b *Broker) registerUnregisterBroker() {
	b.apis.add(kmsg.UnregisterBroker, 0, 0, func(rc *reqCtx) (kmsg.Response, error) { return b.controller.handleUnregisterBroker(rc) })
}

func (c *controller) handleUnregisterBroker(rc *reqCtx) (kmsg.Response, error) {
	r := rc.req.Body.(*kmsg.UnregisterBrokerRequest)
	resp := kmsg.NewPtrUnregisterBrokerResponse()
	if !rc.authorizeCluster(OpAlter) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	_, err := c.store.Update(func(img *metadata.Image) ([]metadata.Record, error) {
		if _, ok := img.Cluster.Broker(r.BrokerID); !ok {
			return nil, kerr.BrokerIDNotRegistered
		}
		unclean := func(topic string) bool { return uncleanElectionFor(img, topic, c.cfg.UncleanLeaderElection) }
		return append(fenceChanges(img, r.BrokerID, unclean), metadata.UnregisterBrokerRecord{BrokerID: r.BrokerID}), nil
	})
	if err == nil && !c.store.IsVoter(r.BrokerID) {
		err = c.store.RemoveObserver(r.BrokerID)
	}
	if resp.ErrorCode = c.errCode(kmsg.UnregisterBroker, err); resp.ErrorCode == 0 {
		c.mu.Lock()
		delete(c.sessions, r.BrokerID)
		c.mu.Unlock()
		c.logger.Info("unregistered a broker", zap.Int32("broker", r.BrokerID))
	} else if !errors.Is(err, kerr.BrokerIDNotRegistered) {
		resp.ErrorMessage = errorMessage(err)
	}
	return resp, nil
}
