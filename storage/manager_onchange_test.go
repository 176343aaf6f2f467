package storage

import (
	"fmt"
	"strings"
	"testing"

	"github.com/strata-io/strata/storage/vfs"
)

// TestManagerOnChangeFollowsEveryAdminChange checks that OnChange sees each
// successful admin change, once, with the state after it, and no refused
// or validate-only one.
func TestManagerOnChangeFollowsEveryAdminChange(t *testing.T) {
	var seen []string
	m, err := OpenManager(vfs.Default, t.TempDir(), DefaultConfig(), ManagerOptions{NodeID: 1,
		OnChange: func(topics []*Topic, clusterDefault, node map[string]string) {
			var parts []string
			for _, tp := range topics {
				parts = append(parts, fmt.Sprintf("%s/%d/%s", tp.Name, len(tp.Partitions()), tp.ConfigMap()["retention.ms"]))
			}
			seen = append(seen, fmt.Sprintf("[%s] %s %s", strings.Join(parts, " "), clusterDefault["log.retention.ms"], node["log.retention.ms"]))
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	steps := []func() error{
		func() error { _, err := m.CreateTopic("b", 1, nil, false); return err },
		func() error {
			_, err := m.CreateTopic("a", 2, map[string]string{"retention.ms": "5"}, false)
			return err
		},
		func() error { _, err := m.CreateTopic("c", 1, nil, true); return err },
		func() error { _, err := m.CreateTopic("a", 1, nil, false); return err },
		func() error { return m.CreatePartitions("b", 3, false) },
		func() error { return m.CreatePartitions("b", 4, true) },
		func() error { return m.AlterTopicConfigs("b", map[string]string{"retention.ms": "7"}, false) },
		func() error { return m.AlterBrokerConfigs(map[string]string{"log.retention.ms": "9"}, false, false) },
		func() error { return m.AlterBrokerConfigs(map[string]string{"log.retention.ms": "8"}, true, false) },
		func() error { return m.DeleteTopic("a") },
		func() error { return m.DeleteTopic("a") },
	}
	for _, step := range steps {
		_ = step()
	}
	want := []string{
		"[b/1/]  ",
		"[a/2/5 b/1/]  ",
		"[a/2/5 b/3/]  ",
		"[a/2/5 b/3/7]  ",
		"[a/2/5 b/3/7] 9 ",
		"[a/2/5 b/3/7] 9 8",
		"[b/3/7] 9 8",
	}
	if strings.Join(seen, "\n") != strings.Join(want, "\n") {
		t.Fatalf("OnChange saw\n%s\nwant\n%s", strings.Join(seen, "\n"), strings.Join(want, "\n"))
	}
}
