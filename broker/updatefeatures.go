package broker

// UpdateFeatures.
//
// Changes the finalized features (features.go) as Kafka 4.4's
// FeatureControlManager.updateFeatures decides, checked on the current
// image and written as FeatureLevelRecords, all or none: the first update
// that fails fails the request with INVALID_UPDATE_VERSION at the top
// level, its message Kafka's ("The update failed for all features since
// the following feature had an error: Invalid update version 2 for feature
// group.version. Local controller 1 only supports versions 0-1"). In
// Kafka's order an update is refused for an unknown upgrade type, a level
// below 0, a feature this node does not know or a level outside what it
// supports ("Feature foo.version not found." for an unknown one at level
// 0), a lower level without SAFE_DOWNGRADE or UNSAFE_DOWNGRADE, a
// higher one with either, a feature whose dependencies (Kafka's
// FeatureVersion.dependencies) the levels after the request do not meet,
// and a metadata.version downgrade across a level that changed the
// metadata (MetadataVersion.didMetadataChange; an unsafe one is never
// done). v0 has no upgrade type: Kafka 4.4 takes every v0 update as an
// UPGRADE whatever AllowDowngrade says, and so does Strata. Two updates of
// one feature: the last one counts. ValidateOnly (v1+) checks and writes
// nothing. Below v2 a success lists each update with error 0 and message
// "NONE", as Kafka's; a failure lists none. Needs ALTER on the cluster
// (CLUSTER_AUTHORIZATION_FAILED otherwise). In a cluster it goes to the
// active controller (forward.go), which checks the levels against its own
// table: Strata's nodes do not register their supported features, so
// "Local controller N" is the only support checked, where Kafka's
// controller checks every registered broker's and controller's too.
// kraft.version (features.go) is 1 on a cluster: 1 is taken and changes
// nothing, 0 refused as Kafka refuses a kraft.version downgrade.

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/strata-io/strata/metadata"
	"github.com/strata-io/strata/metadata/quorum"
)

// registerUpdateFeatures serves UpdateFeatures; its versions are here and nowhere else.
func registerUpdateFeatures(r *registry) { r.add(kmsg.UpdateFeatures, 0, 2, handleUpdateFeatures) }

// Kafka's FeatureUpdate.UpgradeType.
const (
	upgradeUpgrade         int8 = 1
	upgradeSafeDowngrade   int8 = 2
	upgradeUnsafeDowngrade int8 = 3
)

// metadataChanged is, for each metadata.version Strata supports, whether
// Kafka 4.4's MetadataVersion.didMetadataChange is true of it: a
// downgrade from a level at or above one that did to a level below it may
// lose metadata, and Kafka refuses it.
var metadataChanged = map[int16]bool{7: true, 8: true, 9: false, 10: false, 11: true, 12: false, 13: true}

func handleUpdateFeatures(rc *reqCtx) (kmsg.Response, error) {
	req := rc.req.Body.(*kmsg.UpdateFeaturesRequest)
	resp := kmsg.NewPtrUpdateFeaturesResponse()
	if !rc.authorizeCluster(OpAlter) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	node, inQuorum := rc.svc.cfg.NodeID, rc.svc.cfg.Quorum != nil
	decide := func(img *metadata.Image) ([]metadata.Record, error) {
		levels := map[string]int16{}
		for name, level := range img.Features.Finalized() {
			levels[name] = level
		}
		for _, u := range req.FeatureUpdates {
			levels[u.Feature] = u.MaxVersionLevel
		}
		var records []metadata.Record
		epoch := max(img.Features.Epoch()+1, 0)
		for _, u := range req.FeatureUpdates {
			typ := u.UpgradeType
			if rc.req.Version == 0 {
				typ = upgradeUpgrade
			}
			if msg := updateRefused(img, node, inQuorum, u.Feature, u.MaxVersionLevel, typ, levels); msg != "" {
				return nil, featureUpdateError{msg}
			}
			if inQuorum && u.Feature == kraftVersionFeature {
				continue // the quorum's level, not the image's: nothing to write
			}
			records = append(records, metadata.FeatureLevelRecord{Name: u.Feature, FeatureLevel: u.MaxVersionLevel, Epoch: epoch})
		}
		if req.ValidateOnly {
			return nil, nil
		}
		return records, nil
	}
	if _, err := rc.svc.meta.Update(decide); err != nil {
		var refused featureUpdateError
		if errors.As(err, &refused) {
			resp.ErrorCode = kerr.InvalidUpdateVersion.Code
			resp.ErrorMessage = kmsg.StringPtr("The update failed for all features since the following feature had an error: " + refused.msg)
			return resp, nil
		}
		// The change could not be made durable, or this node stopped
		// being the active controller (NOT_CONTROLLER: the client retries).
		code := kerr.UnknownServerError
		if errors.Is(err, quorum.ErrNotController) {
			code = kerr.NotController
		}
		errors.As(err, &code)
		resp.ErrorCode, resp.ErrorMessage = code.Code, errorMessage(err)
		rc.svc.logger.Warn("cannot update the finalized features", zap.Error(err))
		return resp, nil
	}
	if rc.req.Version < 2 {
		for _, u := range req.FeatureUpdates {
			r := kmsg.NewUpdateFeaturesResponseResult()
			r.Feature, r.ErrorMessage = u.Feature, kmsg.StringPtr("NONE")
			resp.Results = append(resp.Results, r)
		}
	}
	return resp, nil
}

// featureUpdateError is an update the controller refuses, with Kafka's
// message for it.
type featureUpdateError struct{ msg string }

func (e featureUpdateError) Error() string { return e.msg }

// updateRefused is why Kafka's FeatureControlManager.updateFeature refuses
// to take name to level with upgrade type typ on img, "" when it does
// not; levels is every feature's level once the request is done. On a
// node of a cluster (inQuorum) kraft.version is known, at 1 for good.
func updateRefused(img *metadata.Image, node int32, inQuorum bool, name string, level int16, typ int8, levels map[string]int16) string {
	invalid := func(why string) string {
		return fmt.Sprintf("Invalid update version %d for feature %s. %s", level, name, why)
	}
	if typ < upgradeUpgrade || typ > upgradeUnsafeDowngrade {
		return invalid("The controller does not support the given upgrade type.")
	}
	current := img.Features.Level(name)
	if level < 0 {
		return invalid("A feature version cannot be less than 0.")
	}
	if inQuorum && name == kraftVersionFeature {
		switch {
		case level > kraftVersion:
			return invalid(fmt.Sprintf("Local controller %d only supports versions 0-%d", node, kraftVersion))
		case level < kraftVersion:
			return invalid("Can't downgrade the version of this feature.")
		}
		return ""
	}
	f, known := knownFeature(name)
	switch {
	case !known && level > 0:
		return invalid(fmt.Sprintf("Local controller %d does not support this feature.", node))
	case known && (level < f.min || level > f.max):
		return invalid(fmt.Sprintf("Local controller %d only supports versions %d-%d", node, f.min, f.max))
	}
	switch {
	case level < current && typ == upgradeUpgrade:
		return invalid("Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade.")
	case level > current && typ != upgradeUpgrade:
		return invalid("Can't downgrade to a newer version.")
	}
	if name == metadata.MetadataVersionFeature {
		if level < current && metadataChangedBetween(level, current) {
			why := "Refusing to perform the requested downgrade because it might delete metadata information."
			if typ == upgradeUnsafeDowngrade {
				why = "Unsafe metadata downgrade is not supported in this version."
			}
			return fmt.Sprintf("Unsupported metadata.version downgrade from %d to %d. %s", current, level, why)
		}
		return ""
	}
	if !known {
		return invalid(fmt.Sprintf("Feature %s not found.", name))
	}
	for dep, need := range f.requires[level] {
		if levels[dep] < need {
			return fmt.Sprintf("%s could not be set to %d because it depends on %s level %d", name, level, dep, need)
		}
	}
	return ""
}

// metadataChangedBetween is Kafka's MetadataVersion.checkIfMetadataChanged
// for a downgrade from high to low: whether a level above low, up to
// high, changed the metadata.
func metadataChangedBetween(low, high int16) bool {
	for l := high; l > low; l-- {
		if metadataChanged[l] {
			return true
		}
	}
	return false
}
