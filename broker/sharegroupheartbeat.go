package broker

// ShareGroupHeartbeat (KIP-932), v1.
//
// Share group members heartbeat their subscription and get their member
// epoch and assigned partitions, computed by Kafka's SimpleAssignor (a
// partition may go to several members; no revocation phase); see
// coordinator/share_group.go. A partition is assigned once its share state
// is initialized: the heartbeat that first sees it has the share
// coordinator of each share-partition initialize it
// (InitializeShareGroupState through the share-state client,
// sharepersister.go: in process for the share coordinator partitions
// this node leads, over the inter-broker listener for the others, with
// Kafka's retries) before it is answered, and a later heartbeat gets the
// partition.
// The session timeout is group.share.session.timeout.ms and the heartbeat
// interval group.share.heartbeat.interval.ms, or the group's
// share.session.timeout.ms and share.heartbeat.interval.ms within the
// broker's min/max bounds; group.share.max.size members at most. Member
// epoch -1 leaves. As Kafka 4.4's KafkaApis, READ on the group, a member
// id of 1 to 36 characters (else INVALID_REQUEST, no message) and DESCRIBE
// on every subscribed topic (else TOPIC_AUTHORIZATION_FAILED) come first.
// Below share.version 1 it answers UNSUPPORTED_VERSION (no message)
// before anything else, as Kafka's (features.go).

import (
	"strconv"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/coordinator"
	"github.com/strata-io/strata/internal/configdef"
	"github.com/strata-io/strata/metadata"
)

// registerShareGroupHeartbeat serves ShareGroupHeartbeat; its versions are here and nowhere else.
func registerShareGroupHeartbeat(r *registry) {
	r.add(kmsg.ShareGroupHeartbeat, 1, 1, handleShareGroupHeartbeat)
}

func handleShareGroupHeartbeat(rc *reqCtx) (kmsg.Response, error) {
	r := rc.req.Body.(*kmsg.ShareGroupHeartbeatRequest)
	fail := func(err *kerr.Error) (kmsg.Response, error) {
		resp := kmsg.NewPtrShareGroupHeartbeatResponse()
		resp.ErrorCode = err.Code
		return resp, nil
	}
	if !rc.svc.shareGroupsEnabled() {
		return fail(kerr.UnsupportedVersion)
	}
	if !rc.authorize(OpRead, ResourceGroup, r.GroupID) {
		return fail(kerr.GroupAuthorizationFailed)
	}
	if n := len(utf16.Encode([]rune(r.MemberID))); n == 0 || n > 36 { // Java String.length
		return fail(kerr.InvalidRequest)
	}
	for _, topic := range r.SubscribedTopicNames {
		if !rc.authorize(OpDescribe, ResourceTopic, topic) {
			return fail(kerr.TopicAuthorizationFailed)
		}
	}
	return rc.svc.groups.ShareGroupHeartbeat(r, requestClient(rc)), nil
}

// shareSettings is a share group's settings as Kafka's GroupConfig gives
// them: its share.session.timeout.ms, share.heartbeat.interval.ms and
// share.assignment.interval.ms group configs where set, within the broker's group.share.min/max bounds, else
// the broker's group.share.* configs.
func shareSettings(meta interface{ Image() *metadata.Image }, static map[string]string) func(group string) coordinator.ShareSettings {
	broker := func(key string) int64 {
		v, ok := static[key]
		if !ok {
			v, ok = configdef.GroupBrokerDefaults[key]
		}
		if !ok && key == "group.share.max.size" {
			v = "200"
		}
		n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		return n
	}
	return func(group string) coordinator.ShareSettings {
		set := meta.Image().Configs.Of(groupConfigResource(group))
		get := func(key string) time.Duration {
			n := broker("group.share." + key)
			if v, ok := set["share."+key]; ok {
				if m, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
					n = max(broker("group.share.min."+key), min(m, broker("group.share.max."+key)))
				}
			}
			return time.Duration(n) * time.Millisecond
		}
		return coordinator.ShareSettings{
			SessionTimeout:     get("session.timeout.ms"),
			HeartbeatInterval:  get("heartbeat.interval.ms"),
			AssignmentInterval: get("assignment.interval.ms"),
			MaxSize:            int(broker("group.share.max.size")),
		}
	}
}
