package storage

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
)

// groupConfigsFile holds the GROUP config resources (a group's own
// consumer.session.timeout.ms, ...) of a single node. Kafka keeps them in
// the metadata log as ConfigRecords; a single node keeps the whole set in
// one JSON file, rewritten atomically on each change:
//
//	{"version":1,"groups":{"g1":{"consumer.session.timeout.ms":"50000"}}}
const groupConfigsFile = "strata-group-configs.json"

type groupConfigsJSON struct {
	Version int                          `json:"version"`
	Groups  map[string]map[string]string `json:"groups"`
}

// GroupConfigs returns the configs of every group that has some (none
// when the file is missing).
func (m *Manager) GroupConfigs() (map[string]map[string]string, error) {
	path := filepath.Join(m.dir, groupConfigsFile)
	data, err := slurpFile(m.fsys, path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("group configs %s: %w", path, err)
	}
	var d groupConfigsJSON
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, fmt.Errorf("group configs %s: %w", path, err)
	}
	if d.Version != 1 {
		return nil, fmt.Errorf("group configs %s: unsupported version %d", path, d.Version)
	}
	return d.Groups, nil
}

// SetGroupConfigs replaces the configs of every group, durably (written
// aside, fsynced and renamed into place) before it returns.
func (m *Manager) SetGroupConfigs(groups map[string]map[string]string) error {
	m.adminMu.Lock()
	defer m.adminMu.Unlock()
	if err := m.ensureOpen(); err != nil {
		return err
	}
	if groups == nil {
		groups = map[string]map[string]string{}
	}
	data, err := json.MarshalIndent(groupConfigsJSON{Version: 1, Groups: groups}, "", "  ")
	if err != nil {
		return fmt.Errorf("group configs: %w", err)
	}
	if err := replaceFile(m.fsys, filepath.Join(m.dir, groupConfigsFile), append(data, '\n')); err != nil {
		return fmt.Errorf("group configs: %w", storageFailure(err))
	}
	return nil
}
