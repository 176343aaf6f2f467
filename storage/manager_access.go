package storage

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
)

// accessFile keeps a single node's access state (SCRAM credentials, ACLs
// and quotas) and featuresFile its finalized features: bytes the metadata
// layer encodes, which storage keeps without reading them.
const (
	accessFile   = "strata-access.json"
	featuresFile = "strata-features.json"
)

// AccessState is what SetAccessState last kept; nil when nothing was.
func (m *Manager) AccessState() ([]byte, error) { return m.metadataState("access state", accessFile) }

// SetAccessState replaces the access state with data, durably (written
// aside, fsynced and renamed into place, the directory fsynced) before it
// returns.
func (m *Manager) SetAccessState(data []byte) error {
	return m.setMetadataState("access state", accessFile, data)
}

// FeatureState is what SetFeatureState last kept; nil when nothing was.
func (m *Manager) FeatureState() ([]byte, error) {
	return m.metadataState("finalized features", featuresFile)
}

// SetFeatureState replaces the finalized features with data, as durably
// as SetAccessState.
func (m *Manager) SetFeatureState(data []byte) error {
	return m.setMetadataState("finalized features", featuresFile, data)
}

func (m *Manager) metadataState(what, file string) ([]byte, error) {
	path := filepath.Join(m.dir, file)
	data, err := slurpFile(m.fsys, path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", what, path, err)
	}
	return data, nil
}

func (m *Manager) setMetadataState(what, file string, data []byte) error {
	m.adminMu.Lock()
	defer m.adminMu.Unlock()
	if err := m.ensureOpen(); err != nil {
		return err
	}
	if err := replaceFile(m.fsys, filepath.Join(m.dir, file), data); err != nil {
		return fmt.Errorf("%s: %w", what, storageFailure(err))
	}
	return nil
}
