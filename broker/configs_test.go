package broker

import (
	"testing"

	"github.com/strata-io/strata/internal/configdef"
)

// TestReadOnlyConfigValuesMatchConfigdef checks that DescribeConfigs has a
// value for each read-only broker config configdef says it lists, and lists
// no other.
func TestReadOnlyConfigValuesMatchConfigdef(t *testing.T) {
	described := map[string]bool{}
	for _, d := range configdef.Brokers() {
		if !d.Described {
			continue
		}
		described[d.Name] = true
		if readOnlyConfigValues[d.Name] == nil {
			t.Errorf("%s is described but has no value", d.Name)
		}
	}
	for name := range readOnlyConfigValues {
		if !described[name] {
			t.Errorf("%s has a value but configdef does not describe it", name)
		}
	}
}
