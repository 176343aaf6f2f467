package metadata

// The finalized feature levels (Kafka's FeaturesImage): the level each
// feature is finalized at in the cluster, the same on every node, as Kafka
// keeps them in its metadata log as FeatureLevelRecords. What a feature
// means and which levels this software supports is the broker's
// (broker/features.go); the image only keeps the levels.

import (
	"fmt"
	"maps"
	"slices"
)

// FeatureLevelRecord finalizes feature Name at FeatureLevel; level 0
// removes it, as Kafka's FeatureLevelRecord does. Epoch is the finalized
// features epoch the change makes, where Kafka takes the offset of its
// latest metadata record: Strata's epoch moves with feature changes alone,
// and a snapshot's records carry the image's, so that it never goes back.
type FeatureLevelRecord struct {
	Name         string
	FeatureLevel int16
	Epoch        int64
}

func (FeatureLevelRecord) record() {}

// FeaturesImage is the finalized features and their epoch.
type FeaturesImage struct {
	levels map[string]int16
	epoch  int64
}

// Level is the level name is finalized at; 0 when it is not.
func (f FeaturesImage) Level(name string) int16 { return f.levels[name] }

// Finalized is the finalized features by name, levels above 0 only. The
// map must not be modified.
func (f FeaturesImage) Finalized() map[string]int16 { return f.levels }

// Epoch is the finalized features epoch: -1 while nothing was ever
// finalized, as Kafka's ApiVersions answers an unknown epoch.
func (f FeaturesImage) Epoch() int64 {
	if f.levels == nil && f.epoch == 0 {
		return -1
	}
	return f.epoch
}

// Bootstrapped reports whether features were ever finalized: the first
// controller (or a single node's first start) finalizes the defaults.
func (f FeaturesImage) Bootstrapped() bool { return f.levels != nil }

// featuresDelta is the changes to a FeaturesImage.
type featuresDelta struct {
	levels map[string]int16 // 0: removed
	epoch  int64
}

func (d *featuresDelta) replay(base FeaturesImage, r FeatureLevelRecord) error {
	if r.Name == "" || r.FeatureLevel < 0 {
		return fmt.Errorf("%w: feature %q at level %d", ErrInvalidRecord, r.Name, r.FeatureLevel)
	}
	if r.Epoch < max(base.epoch, d.epoch) {
		return fmt.Errorf("%w: finalized features epoch would go back from %d to %d", ErrInvalidRecord, max(base.epoch, d.epoch), r.Epoch)
	}
	if d.levels == nil {
		d.levels = map[string]int16{}
	}
	d.levels[r.Name], d.epoch = r.FeatureLevel, r.Epoch
	return nil
}

func (d *featuresDelta) apply(base FeaturesImage) FeaturesImage {
	if d.levels == nil {
		return base
	}
	levels := maps.Clone(base.levels)
	if levels == nil {
		levels = map[string]int16{}
	}
	for name, level := range d.levels {
		if level == 0 {
			delete(levels, name)
		} else {
			levels[name] = level
		}
	}
	return FeaturesImage{levels: levels, epoch: d.epoch}
}

// records lists the records that rebuild f from none: a feature finalized
// at no level left still marks f as bootstrapped.
func (f FeaturesImage) records() []Record {
	if f.levels == nil {
		return nil
	}
	var out []Record
	for _, name := range slices.Sorted(maps.Keys(f.levels)) {
		out = append(out, FeatureLevelRecord{Name: name, FeatureLevel: f.levels[name], Epoch: f.epoch})
	}
	if len(out) == 0 {
		out = append(out, FeatureLevelRecord{Name: MetadataVersionFeature, Epoch: f.epoch})
	}
	return out
}

// FeatureRecords lists the records that rebuild img's finalized features
// from none: a single node keeps them as they are.
func FeatureRecords(img *Image) []Record { return img.Features.records() }

// MetadataVersionFeature is Kafka's metadata.version: always finalized
// once the cluster is bootstrapped.
const MetadataVersionFeature = "metadata.version"
