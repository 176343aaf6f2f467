package broker

// A forwarded change is answered once this node's image shows it. The
// controller answers once the change is committed, which can be before
// this node applied it (a follower learns the commit index with the
// leader's next append), so without the wait the client that changed
// something through this node could, asking this node next, be told
// UNKNOWN_TOPIC_OR_PARTITION for the topic it created or the partition it
// added, still see the topic it deleted, the old config value, the old
// leader or replicas. Kafka's brokers do not wait, and its clients see
// that race. The controller's answer does not carry the metadata offset
// it committed the change at, so the wait is for the visible effect of
// each item that succeeded (awaitedChanges), at most imageWait and at
// most what is left of the request's own TimeoutMillis, after which the
// answer goes out anyway with a warning. Validate-only requests change
// nothing and are not waited for.

import (
	"bytes"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/strata-io/strata/metadata"
)

// imageCheck is whether one change the controller made shows in an image.
type imageCheck func(*metadata.Image) bool

// awaitForwarded waits until the changes the controller answered resp
// for are in this node's image. before is this node's image from before
// the request was forwarded, for what the answer leaves out: the id of a
// topic deleted by name (DeleteTopics below v6) or created (CreateTopics
// below v7), the leader epoch an ElectLeaders raises. start is when the
// forward began.
func (f *forwarder) awaitForwarded(before *metadata.Image, start time.Time, req kmsg.Request, resp kmsg.Response) {
	checks := awaitedChanges(before, req, resp)
	if len(checks) == 0 {
		return
	}
	wait := imageWait
	if ms := requestTimeoutMillis(req); ms > 0 {
		wait = max(0, min(wait, time.Until(start.Add(time.Duration(ms)*time.Millisecond))))
	}
	if !waitForImage(f.store, wait, func(img *metadata.Image) bool {
		return !slices.ContainsFunc(checks, func(ok imageCheck) bool { return !ok(img) })
	}) {
		f.logger.Warn("changes the active controller made are not in this node's metadata yet; answering anyway",
			zap.String("request", kmsg.Key(req.Key()).Name()), zap.Duration("waited", wait), zap.Int("changes", len(checks)))
	}
}

// requestTimeoutMillis is req's TimeoutMillis, 0 for a request without.
func requestTimeoutMillis(req kmsg.Request) int32 {
	switch r := req.(type) {
	case *kmsg.CreateTopicsRequest:
		return r.TimeoutMillis
	case *kmsg.DeleteTopicsRequest:
		return r.TimeoutMillis
	case *kmsg.CreatePartitionsRequest:
		return r.TimeoutMillis
	case *kmsg.ElectLeadersRequest:
		return r.TimeoutMillis
	case *kmsg.AlterPartitionAssignmentsRequest:
		return r.TimeoutMillis
	case *kmsg.UpdateFeaturesRequest:
		return r.TimeoutMillis
	}
	return 0
}

// awaitedChanges are the checks of what the controller changed, one per
// item it answered without error, none for a validate-only request.
func awaitedChanges(before *metadata.Image, req kmsg.Request, resp kmsg.Response) []imageCheck {
	switch r := req.(type) {
	case *kmsg.CreateTopicsRequest:
		if !r.ValidateOnly {
			return createdTopics(before, resp.(*kmsg.CreateTopicsResponse))
		}
	case *kmsg.DeleteTopicsRequest:
		return deletedTopics(before, resp.(*kmsg.DeleteTopicsResponse))
	case *kmsg.CreatePartitionsRequest:
		if !r.ValidateOnly {
			return addedPartitions(r, resp.(*kmsg.CreatePartitionsResponse))
		}
	case *kmsg.AlterConfigsRequest:
		if !r.ValidateOnly {
			return replacedConfigs(r, resp.(*kmsg.AlterConfigsResponse))
		}
	case *kmsg.IncrementalAlterConfigsRequest:
		if !r.ValidateOnly {
			return alteredConfigs(r, resp.(*kmsg.IncrementalAlterConfigsResponse))
		}
	case *kmsg.ElectLeadersRequest:
		return electedLeaders(before, resp.(*kmsg.ElectLeadersResponse))
	case *kmsg.AlterClientQuotasRequest:
		if !r.ValidateOnly {
			return alteredClientQuotas(r, resp.(*kmsg.AlterClientQuotasResponse))
		}
	case *kmsg.AlterPartitionAssignmentsRequest:
		return reassignedPartitions(r, resp.(*kmsg.AlterPartitionAssignmentsResponse))
	case *kmsg.AlterUserSCRAMCredentialsRequest:
		return alteredScramCredentials(r, resp.(*kmsg.AlterUserSCRAMCredentialsResponse))
	case *kmsg.CreateACLsRequest:
		return createdACLs(r, resp.(*kmsg.CreateACLsResponse))
	case *kmsg.CreateDelegationTokenRequest, *kmsg.RenewDelegationTokenRequest, *kmsg.ExpireDelegationTokenRequest:
		return changedTokens(before, resp)
	case *kmsg.DeleteACLsRequest:
		return deletedACLs(resp.(*kmsg.DeleteACLsResponse))
	case *kmsg.UpdateFeaturesRequest:
		if !r.ValidateOnly && resp.(*kmsg.UpdateFeaturesResponse).ErrorCode == 0 {
			return updatedFeatures(r)
		}
	}
	return nil
}

// updatedFeatures: each feature is at its new level, the last update of
// it in the request.
func updatedFeatures(req *kmsg.UpdateFeaturesRequest) []imageCheck {
	want := map[string]int16{}
	for _, u := range req.FeatureUpdates {
		want[u.Feature] = max(u.MaxVersionLevel, 0)
	}
	return []imageCheck{func(img *metadata.Image) bool {
		for name, level := range want {
			if img.Features.Level(name) != level {
				return false
			}
		}
		return true
	}}
}

// createdACLs: each ACL created is in the image.
func createdACLs(req *kmsg.CreateACLsRequest, resp *kmsg.CreateACLsResponse) []imageCheck {
	var checks []imageCheck
	for i, res := range resp.Results {
		if res.ErrorCode != 0 || i >= len(req.Creations) {
			continue
		}
		a, _, err := creationACL(req.Creations[i])
		if err != nil {
			continue
		}
		checks = append(checks, func(img *metadata.Image) bool {
			_, ok := img.Access.ACLs.ID(a)
			return ok
		})
	}
	return checks
}

// deletedACLs: no ACL deleted is in the image.
func deletedACLs(resp *kmsg.DeleteACLsResponse) []imageCheck {
	var checks []imageCheck
	for _, res := range resp.Results {
		if res.ErrorCode != 0 {
			continue
		}
		for _, m := range res.MatchingACLs {
			a := metadata.ACL{ResourceType: metadata.ACLResourceType(m.ResourceType), ResourceName: m.ResourceName,
				PatternType: metadata.ACLPatternType(m.ResourcePatternType), Principal: m.Principal, Host: m.Host,
				Operation: metadata.ACLOperation(m.Operation), Permission: metadata.ACLPermission(m.PermissionType)}
			checks = append(checks, func(img *metadata.Image) bool {
				_, ok := img.Access.ACLs.ID(a)
				return !ok
			})
		}
	}
	return checks
}

// createdTopics: each created topic is in the image, by its id when the
// answer carries it (v7+), else by its name, as a topic other than one
// this node had by that name before.
func createdTopics(before *metadata.Image, resp *kmsg.CreateTopicsResponse) []imageCheck {
	var checks []imageCheck
	for _, t := range resp.Topics {
		if t.ErrorCode != 0 {
			continue
		}
		if id := t.TopicID; id != ([16]byte{}) {
			checks = append(checks, func(img *metadata.Image) bool { return img.Topics.ByID(id) != nil })
			continue
		}
		name, had := t.Topic, before.Topics.ByName(t.Topic)
		checks = append(checks, func(img *metadata.Image) bool {
			ti := img.Topics.ByName(name)
			return ti != nil && (had == nil || ti.ID != had.ID)
		})
	}
	return checks
}

// deletedTopics: each deleted topic is gone from the image, by its id
// when it is known (from the answer, v6, or this node's image before),
// else by its name.
func deletedTopics(before *metadata.Image, resp *kmsg.DeleteTopicsResponse) []imageCheck {
	var checks []imageCheck
	for _, t := range resp.Topics {
		if t.ErrorCode != 0 {
			continue
		}
		id := t.TopicID
		if id == ([16]byte{}) && t.Topic != nil {
			if had := before.Topics.ByName(*t.Topic); had != nil {
				id = had.ID
			}
		}
		switch {
		case id != [16]byte{}:
			checks = append(checks, func(img *metadata.Image) bool { return img.Topics.ByID(id) == nil })
		case t.Topic != nil:
			name := *t.Topic
			checks = append(checks, func(img *metadata.Image) bool { return img.Topics.ByName(name) == nil })
		}
	}
	return checks
}

// addedPartitions: each topic given more partitions has at least the
// count asked for.
func addedPartitions(req *kmsg.CreatePartitionsRequest, resp *kmsg.CreatePartitionsResponse) []imageCheck {
	counts := make(map[string]int32, len(req.Topics))
	for _, t := range req.Topics {
		counts[t.Topic] = t.Count
	}
	var checks []imageCheck
	for _, t := range resp.Topics {
		count, asked := counts[t.Topic]
		if t.ErrorCode != 0 || !asked {
			continue
		}
		name := t.Topic
		checks = append(checks, func(img *metadata.Image) bool {
			ti := img.Topics.ByName(name)
			return ti != nil && len(ti.Partitions) >= int(count)
		})
	}
	return checks
}

// imageConfigResource is the resource of the image a config resource of a
// request changes, ok false for one the image holds no configs of.
func imageConfigResource(typ kmsg.ConfigResourceType, name string) (metadata.ConfigResource, bool) {
	switch typ {
	case kmsg.ConfigResourceTypeTopic:
		return metadata.ConfigResource{Type: metadata.TopicResource, Name: name}, true
	case kmsg.ConfigResourceTypeBroker:
		if name == "" {
			return metadata.ConfigResource{Type: metadata.BrokerResource}, true
		}
		id, err := strconv.ParseInt(name, 10, 32)
		if err != nil {
			return metadata.ConfigResource{}, false
		}
		return metadata.ConfigResource{Type: metadata.BrokerResource, Name: strconv.Itoa(int(id))}, true
	case kmsg.ConfigResourceTypeGroupConfig:
		return metadata.ConfigResource{Type: metadata.GroupResource, Name: name}, true
	case kmsg.ConfigResourceTypeClientMetrics:
		return clientMetricsResource(name), true
	}
	return metadata.ConfigResource{}, false
}

// replacedConfigs: each resource whose configs were replaced has exactly
// the configs given.
func replacedConfigs(req *kmsg.AlterConfigsRequest, resp *kmsg.AlterConfigsResponse) []imageCheck {
	wants := make(map[configResource]map[string]string, len(req.Resources))
	for _, rr := range req.Resources {
		want := make(map[string]string, len(rr.Configs))
		for _, c := range rr.Configs {
			if c.Value != nil {
				want[c.Name] = *c.Value
			}
		}
		wants[configResource{rr.ResourceType, rr.ResourceName}] = want
	}
	var checks []imageCheck
	for _, rr := range resp.Resources {
		want, asked := wants[configResource{rr.ResourceType, rr.ResourceName}]
		res, ok := imageConfigResource(rr.ResourceType, rr.ResourceName)
		if rr.ErrorCode != 0 || !asked || !ok {
			continue
		}
		checks = append(checks, func(img *metadata.Image) bool { return maps.Equal(img.Configs.Of(res), want) })
	}
	return checks
}

// alteredConfigs: each altered resource shows every operation done: a
// SET config has its value, a DELETE one none, an APPEND one has the
// items appended, a SUBTRACT one none of the items subtracted.
func alteredConfigs(req *kmsg.IncrementalAlterConfigsRequest, resp *kmsg.IncrementalAlterConfigsResponse) []imageCheck {
	ops := make(map[configResource][]kmsg.IncrementalAlterConfigsRequestResourceConfig, len(req.Resources))
	for _, rr := range req.Resources {
		ops[configResource{rr.ResourceType, rr.ResourceName}] = rr.Configs
	}
	var checks []imageCheck
	for _, rr := range resp.Resources {
		configs, asked := ops[configResource{rr.ResourceType, rr.ResourceName}]
		res, ok := imageConfigResource(rr.ResourceType, rr.ResourceName)
		if rr.ErrorCode != 0 || !asked || !ok {
			continue
		}
		checks = append(checks, func(img *metadata.Image) bool {
			current := img.Configs.Of(res)
			return !slices.ContainsFunc(configs, func(c kmsg.IncrementalAlterConfigsRequestResourceConfig) bool {
				return !configOpShows(current, c)
			})
		})
	}
	return checks
}

// configOpShows reports whether configs show operation c done.
func configOpShows(configs map[string]string, c kmsg.IncrementalAlterConfigsRequestResourceConfig) bool {
	v, set := configs[c.Name]
	if c.Op == kmsg.IncrementalAlterConfigOpDelete {
		return !set
	}
	if !set || c.Value == nil {
		return false
	}
	switch c.Op {
	case kmsg.IncrementalAlterConfigOpSet:
		return v == *c.Value
	case kmsg.IncrementalAlterConfigOpAppend:
		items := splitList(v)
		return !slices.ContainsFunc(splitList(*c.Value), func(s string) bool { return !slices.Contains(items, s) })
	case kmsg.IncrementalAlterConfigOpSubtract:
		items := splitList(v)
		return !slices.ContainsFunc(splitList(*c.Value), func(s string) bool { return slices.Contains(items, s) })
	}
	return true
}

// electedLeaders: each partition given a leader has one at a leader epoch
// above the one this node knew before.
func electedLeaders(before *metadata.Image, resp *kmsg.ElectLeadersResponse) []imageCheck {
	if resp.ErrorCode != 0 {
		return nil
	}
	var checks []imageCheck
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				continue
			}
			name, partition, epoch := t.Topic, p.Partition, int32(-1)
			if ti := before.Topics.ByName(name); ti != nil {
				if had, ok := ti.Partition(partition); ok {
					epoch = had.LeaderEpoch
				}
			}
			checks = append(checks, func(img *metadata.Image) bool {
				ti := img.Topics.ByName(name)
				if ti == nil {
					return false
				}
				part, ok := ti.Partition(partition)
				return ok && part.Leader != metadata.NoLeader && part.LeaderEpoch > epoch
			})
		}
	}
	return checks
}

// reassignedPartitions: each reassigned partition's replicas start with
// the target (an ongoing reassignment lists the removing replicas after
// it), each cancelled one has no reassignment ongoing.
func reassignedPartitions(req *kmsg.AlterPartitionAssignmentsRequest, resp *kmsg.AlterPartitionAssignmentsResponse) []imageCheck {
	if resp.ErrorCode != 0 {
		return nil
	}
	type topicPartition struct {
		topic     string
		partition int32
	}
	targets := map[topicPartition][]int32{}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			targets[topicPartition{t.Topic, p.Partition}] = p.Replicas
		}
	}
	var checks []imageCheck
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			target, asked := targets[topicPartition{t.Topic, p.Partition}]
			if p.ErrorCode != 0 || !asked {
				continue
			}
			name, partition := t.Topic, p.Partition
			checks = append(checks, func(img *metadata.Image) bool {
				ti := img.Topics.ByName(name)
				if ti == nil {
					return false
				}
				part, ok := ti.Partition(partition)
				switch {
				case !ok:
					return false
				case target == nil:
					return !part.Reassigning()
				}
				return len(part.Replicas) >= len(target) && slices.Equal(part.Replicas[:len(target)], target)
			})
		}
	}
	return checks
}

// alteredScramCredentials: each altered user's deleted credentials are
// gone and its upserted ones have the salt and iterations asked for.
func alteredScramCredentials(req *kmsg.AlterUserSCRAMCredentialsRequest, resp *kmsg.AlterUserSCRAMCredentialsResponse) []imageCheck {
	altered := map[string]bool{}
	for _, r := range resp.Results {
		altered[r.User] = r.ErrorCode == 0
	}
	var checks []imageCheck
	for _, d := range req.Deletions {
		if altered[d.Name] {
			u := metadata.ScramUser{Name: d.Name, Mechanism: metadata.ScramMechanism(d.Mechanism)}
			checks = append(checks, func(img *metadata.Image) bool {
				_, ok := img.Access.Scram.Credential(u)
				return !ok
			})
		}
	}
	for _, up := range req.Upsertions {
		if altered[up.Name] {
			u, salt, iterations := metadata.ScramUser{Name: up.Name, Mechanism: metadata.ScramMechanism(up.Mechanism)}, up.Salt, up.Iterations
			checks = append(checks, func(img *metadata.Image) bool {
				c, ok := img.Access.Scram.Credential(u)
				return ok && c.Iterations == iterations && bytes.Equal(c.Salt, salt)
			})
		}
	}
	return checks
}

// changedTokens: a created token is in the image, a renewed one or one
// whose expiry moved has the expiry answered, and one expired at once is
// gone (an image with fewer tokens: the answer does not name the token,
// and this node's HMAC of it is not checked here).
func changedTokens(before *metadata.Image, resp kmsg.Response) []imageCheck {
	switch r := resp.(type) {
	case *kmsg.CreateDelegationTokenResponse:
		if r.ErrorCode == 0 {
			return []imageCheck{func(img *metadata.Image) bool {
				_, ok := img.Access.Tokens.Token(r.TokenID)
				return ok
			}}
		}
	case *kmsg.RenewDelegationTokenResponse:
		if r.ErrorCode == 0 {
			return []imageCheck{tokenWithExpiry(r.ExpiryTimestamp)}
		}
	case *kmsg.ExpireDelegationTokenResponse:
		if r.ErrorCode == 0 {
			had := len(before.Access.Tokens.All())
			return []imageCheck{func(img *metadata.Image) bool {
				return tokenWithExpiry(r.ExpiryTimestamp)(img) || len(img.Access.Tokens.All()) < had
			}}
		}
	}
	return nil
}

func tokenWithExpiry(expiry int64) imageCheck {
	return func(img *metadata.Image) bool {
		return slices.ContainsFunc(img.Access.Tokens.All(), func(t metadata.DelegationToken) bool { return t.ExpirationTimestamp == expiry })
	}
}
