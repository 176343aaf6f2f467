package broker

// Forwarding. On a cluster node that is not the active controller, the
// admin changes clients send (CreateTopics, DeleteTopics,
// CreatePartitions, AlterConfigs, IncrementalAlterConfigs, ElectLeaders,
// AlterPartitionReassignments, UnregisterBroker, UnregisterController,
// AlterUserScramCredentials, AlterClientQuotas, CreateAcls, DeleteAcls,
// CreateDelegationToken, RenewDelegationToken, ExpireDelegationToken,
// UpdateFeatures) and the quorum's
// DescribeQuorum, AddRaftVoter and RemoveRaftVoter go to the
// active controller over its controller listener, at the client's version,
// and its answer is relayed, as Kafka brokers forward them
// (ForwardingManager), in an Envelope that carries the client's principal
// and address (envelope.go), so that the controller authorizes the client.
// With no active controller
// known, or when it cannot be reached, each item is NOT_CONTROLLER and the
// client retries. A BROKER config resource naming another node is refused
// here first (forward_configs.go). Topics this node creates on its own
// (auto-creation by Metadata and FindCoordinator, the coordinators'
// internal topics) go the same way, as a CreateTopics request, and are waited for in this node's
// image before they are used. A forwarded change is answered once this
// node's image shows it (forward_await.go).

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/strata-io/strata/internal/kafkaerr"
	"github.com/strata-io/strata/metadata"
	"github.com/strata-io/strata/metadata/quorum"
)

// forwardedKeys are the requests a broker forwards to the active
// controller.
var forwardedKeys = []kmsg.Key{kmsg.CreateTopics, kmsg.DeleteTopics, kmsg.CreatePartitions, kmsg.AlterConfigs, kmsg.IncrementalAlterConfigs,
	kmsg.ElectLeaders, kmsg.AlterPartitionAssignments, kmsg.DescribeQuorum, kmsg.AddRaftVoter, kmsg.RemoveRaftVoter, kmsg.UnregisterBroker,
	kmsg.UnregisterController, kmsg.AlterUserSCRAMCredentials, kmsg.AlterClientQuotas, kmsg.CreateACLs, kmsg.DeleteACLs,
	kmsg.CreateDelegationToken, kmsg.RenewDelegationToken, kmsg.ExpireDelegationToken, kmsg.UpdateFeatures}

// errNoController is a forward with no active controller known.
var errNoController = fmt.Errorf("no active controller is known: %w", kerr.NotController)

// forwarder sends requests to the active controller, one at a time.
type forwarder struct {
	store  *quorum.Store
	node   int32
	sec    peerSecurity // the controller listener's client side
	logger *zap.Logger
	// maxIdle is how long the connection may stay unused: half of
	// connections.max.idle.ms, after which the controller would close it
	// under a request.
	maxIdle time.Duration

	mu       sync.Mutex
	client   *ctrlClient
	lastUsed time.Time
}

// send sends req to the active controller and returns its answer.
func (f *forwarder) send(req kmsg.Request) (kmsg.Response, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	addr := f.store.LeaderAddr()
	if addr == "" {
		return nil, errNoController
	}
	if f.client != nil && (f.client.addr != addr || f.maxIdle > 0 && time.Since(f.lastUsed) > f.maxIdle) {
		f.client.Close()
		f.client = nil
	}
	if f.client == nil {
		c, err := dialController(addr, f.node, controllerRequestTimeout, f.sec)
		if err != nil {
			return nil, err
		}
		f.client = c
	}
	resp, err := f.client.request(req, controllerRequestTimeout)
	f.lastUsed = time.Now()
	if err != nil {
		f.client.Close()
		f.client = nil
	}
	return resp, err
}

// sendFor sends req, forwarded for rc's client, in an Envelope and
// returns the controller's answer to it.
func (f *forwarder) sendFor(rc *reqCtx, req kmsg.Request) (kmsg.Response, error) {
	env, err := envelope(rc, req)
	if err != nil {
		return nil, err
	}
	resp, err := f.send(env)
	if err != nil {
		return nil, err
	}
	return unwrap(req, resp.(*kmsg.EnvelopeResponse))
}

func (f *forwarder) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.client != nil {
		f.client.Close()
		f.client = nil
	}
}

// forwarding makes r's forwarded keys go to the active controller when
// this node is not it.
func (f *forwarder) forwarding(r *registry) {
	for _, k := range forwardedKeys {
		a := r.apis[int16(k)]
		local := a.serve
		a.serve = func(rc *reqCtx) (kmsg.Response, error) {
			if f.store.IsLeader() {
				return local(rc)
			}
			if err := unparsable(rc.req.Body); err != nil {
				return nil, err
			}
			body, merge := splitForwarded(rc.req.Body, f.node, rc.svc)
			if body == nil {
				return merge(rc.req.Body.ResponseKind()), nil
			}
			before, start := f.store.Image(), time.Now()
			resp, err := f.sendFor(rc, body)
			if err != nil {
				f.logger.Info("cannot forward a request to the active controller; answering NOT_CONTROLLER",
					zap.String("request", k.Name()), zap.Error(err))
				resp, err = notControllerResponse(body)
				if err != nil {
					return nil, err
				}
				return merge(resp), nil
			}
			f.awaitForwarded(before, start, body, resp)
			return merge(resp), nil
		}
		r.apis[int16(k)] = a
	}
}

// unparsable is the error closing the connection of a request Kafka's
// parser refuses (an ACL request with an UNKNOWN code), as this node would
// refuse it itself: Kafka's broker parses a request before it forwards it.
func unparsable(req kmsg.Request) error {
	switch r := req.(type) {
	case *kmsg.CreateACLsRequest:
		for _, c := range r.Creations {
			if _, _, err := creationACL(c); err != nil {
				return err
			}
		}
	case *kmsg.DeleteACLsRequest:
		for _, q := range r.Filters {
			if _, err := aclFilter(q.ResourceType, q.ResourceName, q.ResourcePatternType, q.Principal, q.Host, q.Operation, q.PermissionType); err != nil {
				return err
			}
		}
	}
	return nil
}

// notControllerResponse answers each item of req NOT_CONTROLLER.
func notControllerResponse(req kmsg.Request) (kmsg.Response, error) {
	return itemsResponse(req, kerr.NotController.Code)
}

// itemsResponse answers each item of a forwarded req with code.
func itemsResponse(req kmsg.Request, code int16) (kmsg.Response, error) {
	switch r := req.(type) {
	case *kmsg.CreateTopicsRequest:
		resp := kmsg.NewPtrCreateTopicsResponse()
		for _, t := range r.Topics {
			st := kmsg.NewCreateTopicsResponseTopic()
			st.Topic, st.ErrorCode, st.NumPartitions, st.ReplicationFactor = t.Topic, code, -1, -1
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil
	case *kmsg.DeleteTopicsRequest:
		resp := kmsg.NewPtrDeleteTopicsResponse()
		for _, t := range r.Topics {
			st := kmsg.NewDeleteTopicsResponseTopic()
			st.Topic, st.TopicID, st.ErrorCode = t.Topic, t.TopicID, code
			resp.Topics = append(resp.Topics, st)
		}
		for _, name := range r.TopicNames {
			st := kmsg.NewDeleteTopicsResponseTopic()
			st.Topic, st.ErrorCode = kmsg.StringPtr(name), code
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil
	case *kmsg.CreatePartitionsRequest:
		resp := kmsg.NewPtrCreatePartitionsResponse()
		for _, t := range r.Topics {
			st := kmsg.NewCreatePartitionsResponseTopic()
			st.Topic, st.ErrorCode = t.Topic, code
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil
	case *kmsg.AlterConfigsRequest:
		resp := kmsg.NewPtrAlterConfigsResponse()
		for _, res := range r.Resources {
			rr := kmsg.NewAlterConfigsResponseResource()
			rr.ResourceType, rr.ResourceName, rr.ErrorCode = res.ResourceType, res.ResourceName, code
			resp.Resources = append(resp.Resources, rr)
		}
		return resp, nil
	case *kmsg.IncrementalAlterConfigsRequest:
		resp := kmsg.NewPtrIncrementalAlterConfigsResponse()
		for _, res := range r.Resources {
			rr := kmsg.NewIncrementalAlterConfigsResponseResource()
			rr.ResourceType, rr.ResourceName, rr.ErrorCode = res.ResourceType, res.ResourceName, code
			resp.Resources = append(resp.Resources, rr)
		}
		return resp, nil
	case *kmsg.ElectLeadersRequest:
		resp := kmsg.NewPtrElectLeadersResponse()
		resp.ErrorCode = code
		for _, t := range r.Topics {
			st := kmsg.NewElectLeadersResponseTopic()
			st.Topic = t.Topic
			for _, p := range t.Partitions {
				sp := kmsg.NewElectLeadersResponseTopicPartition()
				sp.Partition, sp.ErrorCode = p, code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil
	case *kmsg.AlterPartitionAssignmentsRequest:
		resp := kmsg.NewPtrAlterPartitionAssignmentsResponse()
		resp.ErrorCode = code
		for _, t := range r.Topics {
			st := kmsg.NewAlterPartitionAssignmentsResponseTopic()
			st.Topic = t.Topic
			for _, p := range t.Partitions {
				sp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
				sp.Partition, sp.ErrorCode = p.Partition, code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil
	case *kmsg.DescribeQuorumRequest:
		resp := kmsg.NewPtrDescribeQuorumResponse()
		resp.ErrorCode = code
		return resp, nil
	case *kmsg.AddRaftVoterRequest:
		resp := kmsg.NewPtrAddRaftVoterResponse()
		resp.ErrorCode = code
		return resp, nil
	case *kmsg.RemoveRaftVoterRequest:
		resp := kmsg.NewPtrRemoveRaftVoterResponse()
		resp.ErrorCode = code
		return resp, nil
	case *kmsg.UnregisterBrokerRequest:
		resp := kmsg.NewPtrUnregisterBrokerResponse()
		resp.ErrorCode = code
		return resp, nil
	case *kmsg.UnregisterControllerRequest:
		resp := kmsg.NewPtrUnregisterControllerResponse()
		resp.ErrorCode = code
		return resp, nil
	case *kmsg.AlterUserSCRAMCredentialsRequest:
		return alterScramFailed(r, code, nil), nil
	case *kmsg.CreateDelegationTokenRequest:
		resp := kmsg.NewPtrCreateDelegationTokenResponse()
		resp.ErrorCode, resp.HMAC = code, []byte{}
		return resp, nil
	case *kmsg.RenewDelegationTokenRequest:
		resp := kmsg.NewPtrRenewDelegationTokenResponse()
		resp.ErrorCode = code
		return resp, nil
	case *kmsg.ExpireDelegationTokenRequest:
		resp := kmsg.NewPtrExpireDelegationTokenResponse()
		resp.ErrorCode = code
		return resp, nil
	case *kmsg.AlterClientQuotasRequest:
		return alterClientQuotasAnswer(r, code), nil
	case *kmsg.CreateACLsRequest:
		resp := kmsg.NewPtrCreateACLsResponse()
		for range r.Creations {
			res := kmsg.NewCreateACLsResponseResult()
			res.ErrorCode = code
			resp.Results = append(resp.Results, res)
		}
		return resp, nil
	case *kmsg.DeleteACLsRequest:
		resp := kmsg.NewPtrDeleteACLsResponse()
		for range r.Filters {
			res := kmsg.NewDeleteACLsResponseResult()
			res.ErrorCode = code
			resp.Results = append(resp.Results, res)
		}
		return resp, nil
	case *kmsg.UpdateFeaturesRequest:
		resp := kmsg.NewPtrUpdateFeaturesResponse()
		resp.ErrorCode = code
		return resp, nil
	}
	return nil, fmt.Errorf("%T is not a request a broker forwards", req)
}

// imageWait bounds how long a topic created through the controller is
// waited for in this node's image.
const imageWait = 10 * time.Second

// createTopic creates a topic this node needs (auto-creation, an internal
// topic): on the active controller it proposes it, elsewhere it forwards a
// CreateTopics request and waits for the topic in this node's image.
func (f *forwarder) createTopic(meta metadata.Store, name string, layout replicaLayout, configs map[string]string) ([16]byte, error) {
	if f.store.IsLeader() {
		return proposeTopic(meta, name, layout, configs)
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	req.SetVersion(7)
	req.TimeoutMillis = int32(controllerRequestTimeout / time.Millisecond)
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = name, layout.partitions, layout.rf
	for k, v := range configs {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, kmsg.StringPtr(v)
		t.Configs = append(t.Configs, c)
	}
	req.Topics = append(req.Topics, t)
	kresp, err := f.send(req)
	if err != nil {
		return [16]byte{}, err
	}
	resp := kresp.(*kmsg.CreateTopicsResponse)
	if len(resp.Topics) != 1 {
		return [16]byte{}, fmt.Errorf("the controller answered %d topics to the creation of one", len(resp.Topics))
	}
	st := resp.Topics[0]
	if code, ok := kerr.ErrorForCode(st.ErrorCode).(*kerr.Error); ok {
		msg := code.Description
		if st.ErrorMessage != nil {
			msg = *st.ErrorMessage
		}
		return [16]byte{}, fmt.Errorf("the controller refused topic %s: %w", name, &kafkaerr.Error{Code: code, Message: msg})
	}
	if !waitForImage(f.store, imageWait, func(img *metadata.Image) bool { return img.Topics.ByID(st.TopicID) != nil }) {
		return st.TopicID, fmt.Errorf("topic %s was created but is not in this node's metadata after %v: %w", name, imageWait, kerr.RequestTimedOut)
	}
	return st.TopicID, nil
}

// waitForImage waits until store's image satisfies ok, at most timeout.
func waitForImage(store metadata.Store, timeout time.Duration, ok func(*metadata.Image) bool) bool {
	changed := make(chan struct{}, 1)
	cancel := store.Subscribe(func(_, _ *metadata.Image) {
		select {
		case changed <- struct{}{}:
		default:
		}
	})
	defer cancel()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for !ok(store.Image()) {
		select {
		case <-changed:
		case <-deadline.C:
			return ok(store.Image())
		}
	}
	return true
}

// allocateProducerIDs asks the active controller for a block of producer
// ids (AllocateProducerIds) for this broker at its broker epoch. While it
// cannot, InitProducerId answers COORDINATOR_LOAD_IN_PROGRESS, which
// clients retry, as Kafka's RPCProducerIdManager does.
func (f *forwarder) allocateProducerIDs(epoch int64) (start, end int64, err error) {
	if epoch < 0 {
		return 0, 0, fmt.Errorf("this broker is not registered yet: %w", kerr.CoordinatorLoadInProgress)
	}
	req := kmsg.NewPtrAllocateProducerIDsRequest()
	req.BrokerID, req.BrokerEpoch = f.node, epoch
	kresp, err := f.send(req)
	if err != nil {
		return 0, 0, fmt.Errorf("allocate producer ids: %v: %w", err, kerr.CoordinatorLoadInProgress)
	}
	resp := kresp.(*kmsg.AllocateProducerIDsResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return 0, 0, fmt.Errorf("allocate producer ids: the controller answered %v: %w", err, kerr.CoordinatorLoadInProgress)
	}
	return resp.ProducerIDStart, resp.ProducerIDStart + int64(resp.ProducerIDLen), nil
}

// alterPartition sends a leader's ISR change to the active controller: on
// it, decided on its own store; elsewhere as an AlterPartition request
// over the controller listener.
func (f *forwarder) alterPartition(ctx context.Context, meta metadata.Store, req *kmsg.AlterPartitionRequest) (*kmsg.AlterPartitionResponse, error) {
	if f.store.IsLeader() {
		return storeAlterPartition(meta)(ctx, req)
	}
	resp, err := f.send(req)
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.AlterPartitionResponse), nil
}
