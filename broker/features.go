package broker

// Features (KIP-584): the features this software supports, named and
// numbered as Kafka 4.4's (org.apache.kafka.server.common.Feature), with
// the levels it supports and the level a new cluster finalizes. ApiVersions
// v3+ advertises the supported ranges and the finalized levels of the
// metadata image (metadata/features.go), on the client listeners and the
// controller listener, as Kafka's brokers and controllers do;
// UpdateFeatures (updatefeatures.go) changes the finalized levels. A
// single node finalizes the defaults at its first start, a cluster's first
// active controller in the metadata log, as `kafka-storage format` writes
// the latest production levels into a new cluster's bootstrap metadata.
//
// A feature is supported up to the level whose behaviour Strata has, and
// a new cluster finalizes that level; where Kafka 4.4 finalizes more, the
// README's "What differs" says why:
//
//   - metadata.version 7-14 (3.3-IV3 to 3.6-IV2). What the levels up to 14
//     gate, Strata does: SCRAM credentials in the metadata (11, 3.5-IV2), no
//     leader epoch bump when the controller shrinks an ISR (12, 3.6-IV0:
//     PartitionChangeRecord bumps it only with a new leader), a change of
//     many records applied atomically (13, 3.6-IV1: Kafka's metadata
//     transactions; each Strata change is one batch), delegation tokens in
//     the metadata (14, 3.6-IV2: DelegationTokenRecord). 15 (3.7-IV0) gates
//     KIP-919's controller registration, which Strata's controllers do not
//     send (they are the quorum's voters); above are JBOD
//     directory assignment (17), ELR (23), cordoned log dirs (30), CIDR
//     ACLs (32) and controller unregistration (33). Kafka 4.4's range is
//     7-33 and it finalizes 33.
//   - transaction.version 0-2, as Kafka. From 1 the coordinator writes the
//     flexible transaction log value (TransactionLogValue v1,
//     transactionLogValueVersion); 2 tells clients to run the transactions
//     of KIP-890 part 2 (EndTxn v5, Produce v12, TxnOffsetCommit v5:
//     coordinator/txn_end.go), which the coordinator chooses per request,
//     so older clients keep the v1 flow.
//   - group.version 1: KIP-848 consumer groups (ConsumerGroupHeartbeat).
//   - streams.version 1: KIP-1071 streams groups (StreamsGroupHeartbeat,
//     StreamsGroupDescribe), as Kafka.
//   - eligible.leader.replicas.version 0: ELR (KIP-966) is not served.
//     Kafka: 1.
//   - share.version 0-2 (Kafka 4.4's ShareVersion): 1 (SV_1) enables share
//     groups (KIP-932): below it ShareGroupHeartbeat, ShareGroupDescribe,
//     ShareFetch, ShareAcknowledge and the three share group offset keys
//     answer UNSUPPORTED_VERSION, as KafkaApis.isShareGroupProtocolEnabled
//     (ApiVersions advertises them still, as Kafka's); 2 (SV_2, Kafka 4.4's
//     latest production level, which a new cluster finalizes) adds share
//     groups' dead-letter queues (supportsShareGroupDLQ, sharedlq.go).
//
// kraft.version, which Kafka keeps in the raft log's control records and
// not in the metadata image, is advertised by a cluster's nodes (their
// ApiVersions on client and controller listeners), supported 0-1 and
// finalized at 1, as a Kafka 4.4 quorum formatted with dynamic voters
// (--standalone, --initial-controllers) answers: Strata's quorum always
// has level 1's semantics, its voter set kept in the raft log
// (hashicorp/raft's configuration entries) and changed by AddRaftVoter and
// RemoveRaftVoter whether it started from controller.quorum.voters or
// controller.quorum.bootstrap.servers (Kafka's static voters are level 0
// and refuse those changes). The voters' directory ids are not kept
// (raftvoters.go). A single node has no quorum and does not advertise it.
// UpdateFeatures takes kraft.version 1 and changes nothing; 0 is
// Kafka's "Can't downgrade the version of this feature." (updatefeatures.go).

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/metadata"
)

// feature is one feature Strata knows: it supports levels min to max and
// a new cluster finalizes max.
type feature struct {
	name     string
	min, max int16
	// requires is, by level, the levels of other features it needs, as
	// Kafka 4.4's FeatureVersion.dependencies declares them.
	requires map[int16]map[string]int16
}

// metadataVersionMin is Kafka 4.4's MetadataVersion.MINIMUM_VERSION
// (3.3-IV3), the lowest metadata.version a Kafka 4.x cluster runs at.
const metadataVersionMin = 7

// features is every feature Strata knows, in Kafka's order of
// Feature.PRODUCTION_FEATURES after metadata.version.
var features = []feature{
	{name: metadata.MetadataVersionFeature, min: metadataVersionMin, max: 14},
	{name: transactionVersionFeature, max: 2},
	{name: "group.version", max: 1},
	{name: "eligible.leader.replicas.version", max: 0,
		requires: map[int16]map[string]int16{1: {metadata.MetadataVersionFeature: 23}}},
	{name: shareVersionFeature, max: 2},
	{name: "streams.version", max: 1},
}

// transactionVersionFeature is Kafka's transaction.version.
const transactionVersionFeature = "transaction.version"

// shareVersionFeature is Kafka's share.version, shareGroupsLevel its level
// that enables share groups (ShareVersion.SV_1) and shareDLQLevel the one
// that adds their dead-letter queues (SV_2).
const (
	shareVersionFeature       = "share.version"
	shareGroupsLevel    int16 = 1
	shareDLQLevel       int16 = 2
)

// shareGroupsEnabled is KafkaApis.isShareGroupProtocolEnabled: share.version
// is finalized at shareGroupsLevel or above. Below it the share keys answer
// UNSUPPORTED_VERSION.
func (b *services) shareGroupsEnabled() bool {
	return b.meta.Image().Features.Level(shareVersionFeature) >= shareGroupsLevel
}

// kraftVersionFeature is Kafka's kraft.version, and kraftVersion the level
// a cluster's quorum always has.
const (
	kraftVersionFeature       = "kraft.version"
	kraftVersion        int16 = 1
)

// knownFeature is the feature called name, ok false if Strata knows none.
func knownFeature(name string) (feature, bool) {
	i := slices.IndexFunc(features, func(f feature) bool { return f.name == name })
	if i < 0 {
		return feature{}, false
	}
	return features[i], true
}

// bootstrapFeatures are the records that finalize the defaults in a new
// cluster, at finalized features epoch 0.
func bootstrapFeatures() []metadata.Record {
	var out []metadata.Record
	for _, f := range features {
		if f.max > 0 {
			out = append(out, metadata.FeatureLevelRecord{Name: f.name, FeatureLevel: f.max})
		}
	}
	return out
}

// setFeatures fills resp's SupportedFeatures, FinalizedFeaturesEpoch and
// FinalizedFeatures from the table and img, as Kafka's ApiVersions v3+
// answers: every supported feature, whatever its minimum (Kafka 4.4 lists
// those at 0 at v3 too), and the finalized ones above level 0, min and
// max level alike (Kafka's finalized ranges have been single levels since
// KIP-778); on a node of a cluster (quorum) kraft.version too, after
// metadata.version, where Kafka's Feature enum has it.
func setFeatures(resp *kmsg.ApiVersionsResponse, img *metadata.Image, quorum bool) {
	for _, f := range features {
		s := kmsg.NewApiVersionsResponseSupportedFeature()
		s.Name, s.MinVersion, s.MaxVersion = f.name, f.min, f.max
		resp.SupportedFeatures = append(resp.SupportedFeatures, s)
		if f.name == metadata.MetadataVersionFeature && quorum {
			s.Name, s.MinVersion, s.MaxVersion = kraftVersionFeature, 0, kraftVersion
			resp.SupportedFeatures = append(resp.SupportedFeatures, s)
		}
	}
	resp.FinalizedFeaturesEpoch = img.Features.Epoch()
	for _, f := range features {
		if level := img.Features.Level(f.name); level > 0 {
			fin := kmsg.NewApiVersionsResponseFinalizedFeature()
			fin.Name, fin.MinVersionLevel, fin.MaxVersionLevel = f.name, level, level
			resp.FinalizedFeatures = append(resp.FinalizedFeatures, fin)
		}
		if f.name == metadata.MetadataVersionFeature && quorum {
			fin := kmsg.NewApiVersionsResponseFinalizedFeature()
			fin.Name, fin.MinVersionLevel, fin.MaxVersionLevel = kraftVersionFeature, kraftVersion, kraftVersion
			resp.FinalizedFeatures = append(resp.FinalizedFeatures, fin)
		}
	}
}

// finalizeDefaultFeatures finalizes the defaults in an image that never
// had features finalized: a single node's first start, a cluster's first
// active controller. Once finalized, only UpdateFeatures changes them.
func finalizeDefaultFeatures(meta metadata.Store) error {
	_, err := meta.Update(func(img *metadata.Image) ([]metadata.Record, error) {
		if img.Features.Bootstrapped() {
			return nil, nil
		}
		return bootstrapFeatures(), nil
	})
	if err != nil {
		return fmt.Errorf("finalize the default feature levels: %w", err)
	}
	return nil
}
