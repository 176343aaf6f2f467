package metadata

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLayers checks the dependency rules the metadata split rests on: the
// image depends on nothing of Strata's, and storage on neither the broker,
// the coordinators nor a metadata store's implementation.
func TestLayers(t *testing.T) {
	const module = "github.com/strata-io/strata/"
	for pkg, forbidden := range map[string][]string{
		module + "metadata": {module},
		module + "storage":  {module + "broker", module + "coordinator", module + "metadata/"},
	} {
		out, err := exec.Command("go", "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			if dep == pkg {
				continue
			}
			for _, f := range forbidden {
				if strings.HasPrefix(dep, f) {
					t.Errorf("%s depends on %s", pkg, dep)
				}
			}
		}
	}
}
