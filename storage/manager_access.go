package storage

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
)

// accessFile keeps a single node's access state (SCRAM credentials and,
// as they come, ACLs and quotas): bytes the metadata layer encodes, which
// storage keeps without reading them.
const accessFile = "strata-access.json"

// AccessState is what SetAccessState last kept; nil when nothing was.
func (m *Manager) AccessState() ([]byte, error) {
	path := filepath.Join(m.dir, accessFile)
	data, err := slurpFile(m.fsys, path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("access state %s: %w", path, err)
	}
	return data, nil
}

// SetAccessState replaces the access state with data, durably (written
// aside, fsynced and renamed into place, the directory fsynced) before it
// returns.
func (m *Manager) SetAccessState(data []byte) error {
	m.adminMu.Lock()
	defer m.adminMu.Unlock()
	if err := m.ensureOpen(); err != nil {
		return err
	}
	if err := replaceFile(m.fsys, filepath.Join(m.dir, accessFile), data); err != nil {
		return fmt.Errorf("access state: %w", storageFailure(err))
	}
	return nil
}
