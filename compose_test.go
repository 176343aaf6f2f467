// Package strata holds repository-level checks: files at the root that no
// Go package builds, here docker-compose.yml, checked as Docker Compose
// would load it without Docker being installed.
package strata

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"
)

// loadCompose loads dir/docker-compose.yml with every profile, as
// `docker compose --profile debug config` does: schema, interpolation,
// references between services and volumes.
func loadCompose(t *testing.T, dir string) (*types.Project, error) {
	t.Helper()
	ctx := context.Background()
	details, err := loader.LoadConfigFiles(ctx, []string{filepath.Join(dir, "docker-compose.yml")}, dir)
	if err != nil {
		return nil, err
	}
	return loader.LoadWithContext(ctx, *details, func(o *loader.Options) {
		o.SetProjectName("strata", true)
		o.Profiles = []string{"debug"}
	})
}

// dockerfileDirective returns the space-separated words of the Dockerfile's
// directive (EXPOSE, VOLUME) in the final stage.
func dockerfileDirective(t *testing.T, path, directive string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var words []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 0 && fields[0] == "FROM" {
			words = nil
		}
		if len(fields) > 1 && fields[0] == directive {
			words = append(words, fields[1:]...)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return words
}

func TestDockerComposeFileLoads(t *testing.T) {
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	p, err := loadCompose(t, dir)
	if err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	strata, err := p.GetService("strata")
	if err != nil {
		t.Fatal(err)
	}
	if strata.Build == nil {
		t.Fatal("strata has no build section, want the Dockerfile at the root")
	}
	if strata.Build.Context != dir || strata.Build.Dockerfile != "Dockerfile" {
		t.Fatalf("strata builds %s in %s, want the Dockerfile in %s", strata.Build.Dockerfile, strata.Build.Context, dir)
	}
	dockerfile := filepath.Join(dir, "Dockerfile")

	// Every port the image exposes is published on the same host port, the
	// one the README's commands use (localhost:9092, localhost:9644).
	var published []string
	for _, port := range strata.Ports {
		if port.Published != strconv.Itoa(int(port.Target)) {
			t.Errorf("strata publishes container port %d on host port %s, want the same port", port.Target, port.Published)
		}
		published = append(published, strconv.Itoa(int(port.Target)))
	}
	exposed := dockerfileDirective(t, dockerfile, "EXPOSE")
	if !slices.Equal(published, exposed) {
		t.Errorf("strata publishes %v, the Dockerfile exposes %v", published, exposed)
	}
	if !slices.Contains(strata.Command, "advertised.listeners=PLAINTEXT://localhost:9092") {
		t.Errorf("strata command %q does not advertise localhost:9092", strata.Command)
	}

	// The data volume is the named volume strata-data on the image's VOLUME.
	volumes := dockerfileDirective(t, dockerfile, "VOLUME")
	if len(strata.Volumes) != 1 || len(volumes) != 1 {
		t.Fatalf("strata mounts %+v, the Dockerfile declares VOLUME %v: want one each", strata.Volumes, volumes)
	}
	v := strata.Volumes[0]
	if v.Type != types.VolumeTypeVolume || v.Source != "strata-data" || v.Target != volumes[0] {
		t.Errorf("strata mounts %s %s on %s, want volume strata-data on %s", v.Type, v.Source, v.Target, volumes[0])
	}
	if _, ok := p.Volumes["strata-data"]; !ok {
		t.Errorf("volume strata-data is not declared at the top level")
	}

	kafka, err := p.GetService("kafka")
	if err != nil {
		t.Fatal(err)
	}
	if len(kafka.Ports) != 1 || kafka.Ports[0].Published != "9093" {
		t.Errorf("kafka publishes %+v, want host port 9093", kafka.Ports)
	}
	proxy, err := p.GetService("proxy")
	if err != nil {
		t.Fatal(err)
	}
	if proxy.Image != strata.Image || !slices.Contains(proxy.Entrypoint, "--upstream=strata:9092") {
		t.Errorf("proxy runs %s %q, want image %s in front of strata:9092", proxy.Image, proxy.Entrypoint, strata.Image)
	}
}

// TestDockerComposeBrokenFileFails loads broken copies of docker-compose.yml,
// so TestDockerComposeFileLoads cannot pass on a loader that accepts anything.
func TestDockerComposeBrokenFileFails(t *testing.T) {
	good, err := os.ReadFile("docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, old, new string }{
		{"unknown key", "    ports:\n      - \"9092:9092\"", "    portz:\n      - \"9092:9092\""},
		{"bad port", `"9644:9644"`, `"9644:metrics"`},
		{"undeclared volume", "strata-data:/var/lib/strata", "strata-dat:/var/lib/strata"},
		{"unknown dependency", "depends_on: [strata]", "depends_on: [strata-broker]"},
		{"bad yaml", "services:\n", "services:\n  - strata\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(string(good), tc.old) {
				t.Fatalf("docker-compose.yml no longer contains %q", tc.old)
			}
			dir := t.TempDir()
			broken := strings.Replace(string(good), tc.old, tc.new, 1)
			if err := os.WriteFile(filepath.Join(dir, "docker-compose.yml"), []byte(broken), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := loadCompose(t, dir); err == nil {
				t.Fatalf("a docker-compose.yml with %s loaded", tc.name)
			} else {
				t.Logf("%s: %v", tc.name, err)
			}
		})
	}
}
