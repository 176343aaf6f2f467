package strata

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLayers checks the dependency rules the layers rest on (cmd → broker →
// coordinator → replica → storage, metadata beside them, protocol a leaf):
// each package's forbidden imports, and franz-go's client (kgo) nowhere but
// in tests and the harnesses that drive a broker as a client does (bench,
// chaos; compat-tests is a module of its own).
func TestLayers(t *testing.T) {
	const module = "github.com/strata-io/strata/"
	forbidden := map[string][]string{
		"protocol":        {module},
		"metadata":        {module},
		"storage":         {module + "broker", module + "coordinator", module + "replica", module + "metadata"},
		"replica":         {module + "broker", module + "coordinator", module + "metadata"},
		"coordinator":     {module + "broker", module + "metadata/"},
		"metadata/local":  {module + "broker", module + "coordinator", module + "replica", module + "storage"},
		"metadata/quorum": {module + "broker", module + "coordinator", module + "replica", module + "storage"},
	}
	for rel, bad := range forbidden {
		pkg := module + rel
		for _, dep := range deps(t, pkg) {
			for _, f := range bad {
				if dep != pkg && strings.HasPrefix(dep, f) {
					t.Errorf("%s depends on %s", pkg, dep)
				}
			}
		}
	}
	out, err := exec.Command("go", "list", "./...").Output()
	if err != nil {
		t.Fatalf("go list ./...: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		rel := strings.TrimPrefix(pkg, module)
		if rel == "bench" || strings.HasPrefix(rel, "bench/") || rel == "chaos" {
			continue
		}
		for _, dep := range deps(t, pkg) {
			if dep == "github.com/twmb/franz-go/pkg/kgo" {
				t.Errorf("%s imports kgo, franz-go's client", pkg)
			}
		}
	}
}

// deps is go list -deps of pkg, without its tests.
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", pkg).Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	return strings.Fields(string(out))
}
