package storage

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
)

// groupConfigsFile holds the GROUP config resources (a group's own
// consumer.session.timeout.ms, ...) of a single node, and
// clientMetricsFile its CLIENT_METRICS resources (KIP-714's subscriptions:
// metrics, interval.ms, match). Kafka keeps both in the metadata log as
// ConfigRecords; a single node keeps each whole set in one JSON file,
// rewritten atomically on each change:
//
//	{"version":1,"groups":{"g1":{"consumer.session.timeout.ms":"50000"}}}
//	{"version":1,"subscriptions":{"s1":{"metrics":"org.apache.kafka.producer.","interval.ms":"1000"}}}
const (
	groupConfigsFile  = "strata-group-configs.json"
	clientMetricsFile = "strata-client-metrics.json"
)

type groupConfigsJSON struct {
	Version int                          `json:"version"`
	Groups  map[string]map[string]string `json:"groups"`
}

type clientMetricsJSON struct {
	Version       int                          `json:"version"`
	Subscriptions map[string]map[string]string `json:"subscriptions"`
}

// GroupConfigs returns the configs of every group that has some (none
// when the file is missing).
func (m *Manager) GroupConfigs() (map[string]map[string]string, error) {
	var d groupConfigsJSON
	if err := m.readResourceConfigs(groupConfigsFile, "group configs", &d, func() int { return d.Version }); err != nil {
		return nil, err
	}
	return d.Groups, nil
}

// SetGroupConfigs replaces the configs of every group, durably (written
// aside, fsynced and renamed into place) before it returns.
func (m *Manager) SetGroupConfigs(groups map[string]map[string]string) error {
	if groups == nil {
		groups = map[string]map[string]string{}
	}
	return m.writeResourceConfigs(groupConfigsFile, "group configs", groupConfigsJSON{Version: 1, Groups: groups})
}

// ClientMetricsConfigs returns the configs of every client metrics
// subscription (none when the file is missing).
func (m *Manager) ClientMetricsConfigs() (map[string]map[string]string, error) {
	var d clientMetricsJSON
	if err := m.readResourceConfigs(clientMetricsFile, "client metrics", &d, func() int { return d.Version }); err != nil {
		return nil, err
	}
	return d.Subscriptions, nil
}

// SetClientMetricsConfigs replaces every client metrics subscription,
// durably before it returns.
func (m *Manager) SetClientMetricsConfigs(subs map[string]map[string]string) error {
	if subs == nil {
		subs = map[string]map[string]string{}
	}
	return m.writeResourceConfigs(clientMetricsFile, "client metrics", clientMetricsJSON{Version: 1, Subscriptions: subs})
}

// readResourceConfigs reads name into d, which must be of version 1; a
// missing file leaves d as it is.
func (m *Manager) readResourceConfigs(name, what string, d any, version func() int) error {
	path := filepath.Join(m.dir, name)
	data, err := slurpFile(m.fsys, path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s %s: %w", what, path, err)
	}
	if err := json.Unmarshal(data, d); err != nil {
		return fmt.Errorf("%s %s: %w", what, path, err)
	}
	if v := version(); v != 1 {
		return fmt.Errorf("%s %s: unsupported version %d", what, path, v)
	}
	return nil
}

func (m *Manager) writeResourceConfigs(name, what string, d any) error {
	m.adminMu.Lock()
	defer m.adminMu.Unlock()
	if err := m.ensureOpen(); err != nil {
		return err
	}
	data, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if err := replaceFile(m.fsys, filepath.Join(m.dir, name), append(data, '\n')); err != nil {
		return fmt.Errorf("%s: %w", what, storageFailure(err))
	}
	return nil
}
