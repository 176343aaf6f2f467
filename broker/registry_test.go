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

// TestUnstableAPIVersions: the share keys are served only with
// unstable.api.versions.enable.
func TestUnstableAPIVersions(t *testing.T) {
	for _, k := range []kmsg.Key{kmsg.ShareFetch, kmsg.ShareAcknowledge} {
		if _, ok := newRegistry(false).apis[int16(k)]; ok {
			t.Errorf("%s served without unstable.api.versions.enable", k.Name())
		}
		for _, v := range ServedVersions() {
			if v.Key == int16(k) {
				t.Errorf("%s in ServedVersions", k.Name())
			}
		}
		if a, ok := newRegistry(true).apis[int16(k)]; !ok || a.Min != 1 || a.Max != 2 {
			t.Errorf("%s with unstable.api.versions.enable: %+v, want v1-2", k.Name(), a.VersionRange)
		}
	}
}
