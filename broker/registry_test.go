package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestServedVersionsDecodable: every registered range is one kmsg decodes
// (protocol's fuzz tests cover exactly those), and names its own key.
func TestServedVersionsDecodable(t *testing.T) {
	r := newRegistry(true)
	for _, v := range ServedVersions() {
		req := kmsg.RequestForKey(v.Key)
		if req == nil || v.Min < 0 || v.Max > req.MaxVersion() {
			t.Errorf("%s v%d-%d: not decodable by kmsg", kmsg.NameForKey(v.Key), v.Min, v.Max)
		}
		if a := r.apis[v.Key]; a.serve == nil || a.Key != v.Key {
			t.Errorf("%s: registered without its handler", kmsg.NameForKey(v.Key))
		}
	}
}
