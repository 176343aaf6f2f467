package metadata

import (
	"errors"
	"maps"
	"testing"
)

// TestFeaturesReplayAndSnapshot: FeatureLevelRecords finalize and remove
// features, the epoch never goes back, and an image's records (a snapshot,
// a single node's file) rebuild the levels and the epoch.
func TestFeaturesReplayAndSnapshot(t *testing.T) {
	if Empty.Features.Epoch() != -1 || Empty.Features.Bootstrapped() {
		t.Fatalf("empty image: epoch %d, bootstrapped %v", Empty.Features.Epoch(), Empty.Features.Bootstrapped())
	}
	img := replay(t, Empty, FeatureLevelRecord{Name: "metadata.version", FeatureLevel: 13}, FeatureLevelRecord{Name: "group.version", FeatureLevel: 1})
	img = replay(t, img, FeatureLevelRecord{Name: "group.version", FeatureLevel: 0, Epoch: 1})
	img = replay(t, img, FeatureLevelRecord{Name: "x.version", FeatureLevel: 2, Epoch: 2})
	want := map[string]int16{"metadata.version": 13, "x.version": 2}
	if !maps.Equal(img.Features.Finalized(), want) || img.Features.Epoch() != 2 || img.Features.Level("group.version") != 0 {
		t.Fatalf("finalized %v at epoch %d, want %v at 2", img.Features.Finalized(), img.Features.Epoch(), want)
	}
	if err := NewDelta(img).Replay(FeatureLevelRecord{Name: "x.version", FeatureLevel: 1, Epoch: 1}); !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("an epoch going back: %v", err)
	}
	data, err := EncodeBatch(ImageRecords(img))
	if err != nil {
		t.Fatal(err)
	}
	records, err := DecodeBatch(data)
	if err != nil {
		t.Fatal(err)
	}
	back := replay(t, Empty, records...)
	if !maps.Equal(back.Features.Finalized(), want) || back.Features.Epoch() != 2 {
		t.Fatalf("snapshot: finalized %v at epoch %d", back.Features.Finalized(), back.Features.Epoch())
	}
}
