package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestServedVersionsDecodable: every registered range, the unstable ones
// too, is one kmsg decodes (protocol's fuzz tests cover exactly those), and
// names its own key.
func TestServedVersionsDecodable(t *testing.T) {
	r := newRegistry(true)
	for _, v := range r.ranges() {
		req := kmsg.RequestForKey(v.Key)
		if req == nil || v.Min < 0 || v.Max > req.MaxVersion() {
			t.Errorf("%s v%d-%d: not decodable by kmsg", kmsg.NameForKey(v.Key), v.Min, v.Max)
		}
		if a := r.apis[v.Key]; a.serve == nil || a.Key != v.Key {
			t.Errorf("%s: registered without its handler", kmsg.NameForKey(v.Key))
		}
	}
}

// TestUnstableAPIVersions: no key is unstable today, so
// unstable.api.versions.enable serves what ServedVersions lists, the share
// keys among them.
func TestUnstableAPIVersions(t *testing.T) {
	stable, unstable := newRegistry(false).ranges(), newRegistry(true).ranges()
	if len(stable) != len(unstable) || len(stable) != len(ServedVersions()) {
		t.Fatalf("%d keys served, %d with unstable.api.versions.enable, ServedVersions %d", len(stable), len(unstable), len(ServedVersions()))
	}
	for k, want := range map[kmsg.Key][2]int16{
		kmsg.ShareFetch: {1, 2}, kmsg.ShareAcknowledge: {1, 2},
		kmsg.DescribeShareGroupOffsets: {0, 1}, kmsg.AlterShareGroupOffsets: {0, 0}, kmsg.DeleteShareGroupOffsets: {0, 0},
	} {
		if a, ok := newRegistry(false).apis[int16(k)]; !ok || a.Min != want[0] || a.Max != want[1] {
			t.Errorf("%s: %+v, want v%d-%d", k.Name(), a.VersionRange, want[0], want[1])
		}
	}
}
