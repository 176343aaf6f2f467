package storage

// What the Manager may delete in its log dir, and what it must leave alone.
//
// The rule is that nothing is removed or truncated unless the Manager can
// account for it as garbage:
//   - a directory named <topic>-<p>.<uuid hex>-delete, Kafka's and
//     Strata's name for a partition directory whose deletion was decided
//     (both brokers remove them when they open the dir);
//   - a partition directory of a topic listed as deleted in
//     strata-topics.json whose partition.metadata holds that topic's id (a
//     deletion interrupted between the registry write and the rename).
//
// Any other partition-like directory that the registry does not own is
// foreign: another broker's, a copy, Kafka's. It is left alone with one
// warning at open, a topic that would take its name is refused until the
// operator moves it away (or the dir is adopted), and its entries in the
// offset checkpoint files are kept when Strata rewrites them.

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"

	"github.com/strata-io/strata/storage/kraftmeta"
)

// deletedDirPattern is Kafka's LogFileUtils.DELETE_DIR_PATTERN: a
// partition directory being deleted is renamed
// <topic>-<partition>.<uuid hex>-delete, and both brokers remove any
// directory of this form when they open the dir.
var deletedDirPattern = regexp.MustCompile(`^(\S+)-(\S+)\.(\S+)` + deleteDirSuffix + `$`)

// parsePartitionDirName splits <topic>-<partition>; ok is false for names
// that are not partition directories.
func parsePartitionDirName(name string) (topic string, partition int32, ok bool) {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 {
		return "", 0, false
	}
	p, err := strconv.ParseInt(name[i+1:], 10, 32)
	if err != nil || p < 0 || strconv.FormatInt(p, 10) != name[i+1:] {
		return "", 0, false
	}
	return name[:i], int32(p), true
}

// finishDeletions removes the partition directories left by deletions that
// were interrupted after the registry recorded them, when their topic id
// proves they are the deleted topic's, then drops the entries from the
// registry. Runs at open, before any partition is opened.
func (m *Manager) finishDeletions(deleted []registryTopic) error {
	for _, d := range deleted {
		for p := range d.Partitions {
			pdir := partitionDir(m.dir, d.Name, p)
			if !m.holdsTopicID(pdir, d.ID) {
				continue
			}
			m.logger.Info("finishing an interrupted topic deletion", zap.String("dir", pdir), zap.String("id", uuidString(d.ID)))
			if err := m.removePartitionDir(d.Name, p); err != nil {
				return err
			}
		}
	}
	if len(deleted) == 0 {
		return nil
	}
	m.deleting = nil // what is left under those names is not theirs
	return m.writeRegistry(m.registryWith(nil, 0))
}

// holdsTopicID reports whether pdir's partition.metadata names topic id.
func (m *Manager) holdsTopicID(pdir string, id [16]byte) bool {
	data, err := slurpFile(m.fsys, filepath.Join(pdir, partitionMetadataFile))
	if err != nil {
		return false
	}
	got, err := parsePartitionMetadata(data)
	return err == nil && got == id
}

// removePartitionDir renames a partition directory to Kafka's -delete name,
// then removes it; a crash in between leaves a name both brokers remove.
func (m *Manager) removePartitionDir(topic string, partition int32) error {
	id, err := newUUID()
	if err != nil {
		return fmt.Errorf("delete partition %s-%d: %w", topic, partition, err)
	}
	pdir := partitionDir(m.dir, topic, partition)
	doomed := filepath.Join(m.dir, fmt.Sprintf("%s-%d.%x%s", topic, partition, id, deleteDirSuffix))
	if err := m.fsys.Rename(pdir, doomed); err != nil {
		return fmt.Errorf("delete partition %s-%d: %w", topic, partition, err)
	}
	if err := m.fsys.RemoveAll(doomed); err != nil {
		return fmt.Errorf("delete partition %s-%d: %w", topic, partition, err)
	}
	return nil
}

// scanLogDir removes the -delete directories and records the foreign
// partition directories (non-empty, not among hosted, the directories of
// the registered partitions this log dir hosts), which it warns about once.
func (m *Manager) scanLogDir(hosted map[string]bool) error {
	ents, err := m.fsys.ReadDir(m.dir)
	if err != nil {
		return fmt.Errorf("list log dir %s: %w", m.dir, err)
	}
	m.foreign = map[string]bool{}
	var names []string
	for _, de := range ents {
		name := de.Name()
		if !de.IsDir() {
			continue
		}
		if name == kraftmeta.DirName {
			continue // Kafka's metadata log: read when adopting, never touched
		}
		if deletedDirPattern.MatchString(name) {
			if err := m.fsys.RemoveAll(filepath.Join(m.dir, name)); err != nil {
				return fmt.Errorf("remove deleted partition dir %s: %w", name, err)
			}
			continue
		}
		if _, _, ok := parsePartitionDirName(name); !ok {
			continue
		}
		if hosted[name] {
			continue
		}
		if empty, err := m.emptyDir(filepath.Join(m.dir, name)); err != nil || empty {
			continue
		}
		m.foreign[name] = true
		names = append(names, name)
	}
	if len(names) > 0 {
		sort.Strings(names)
		m.logger.Warn("log dir holds partition directories that are not Strata's; they are left alone, and topics with their names "+
			"cannot be created until they are moved away", zap.String("dir", m.dir), zap.Strings("directories", names))
	}
	return nil
}

// emptyDir reports whether dir has no entries.
func (m *Manager) emptyDir(dir string) (bool, error) {
	ents, err := m.fsys.ReadDir(dir)
	if err != nil {
		return false, err
	}
	return len(ents) == 0, nil
}

// errForeignDir wraps the refusal to create a partition over a directory
// the Manager cannot account for.
func (m *Manager) errForeignDir(topic string, partition int32) error {
	return fmt.Errorf("topic %s: log dir %s already holds %s-%d, a partition directory Strata did not create; "+
		"move it away (or start on a Kafka log dir to adopt it) before creating this topic: %w",
		topic, m.dir, topic, partition, kerr.InvalidTopicException)
}

// claimPartitionDir makes sure partition p of t can be created: its
// directory is absent or empty, or is a deleted topic's leftover (removed
// here). A foreign directory is an error and is never touched. Call under
// adminMu.
func (m *Manager) claimPartitionDir(t *Topic, p int32) error {
	pdir := partitionDir(m.dir, t.Name, p)
	if _, err := m.fsys.Stat(pdir); errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return fmt.Errorf("topic %s: %w", t.Name, err)
	}
	if empty, err := m.emptyDir(pdir); err != nil {
		return fmt.Errorf("topic %s: %w", t.Name, err)
	} else if empty {
		return nil
	}
	for _, d := range m.deleting {
		if d.Name == t.Name && p < d.Partitions && m.holdsTopicID(pdir, d.ID) {
			m.logger.Info("removing the directory of a deleted topic", zap.String("dir", pdir), zap.String("id", uuidString(d.ID)))
			return m.removePartitionDir(t.Name, p)
		}
	}
	return m.errForeignDir(t.Name, p)
}

// keepForeignCheckpoints keeps the entries of the checkpoint files read at open
// that belong to foreign partition directories, keyed by file name.
func (m *Manager) keepForeignCheckpoints(file string, cp map[topicPartition]int64) {
	for tp, off := range cp {
		if m.foreign[tp.Topic+"-"+strconv.Itoa(int(tp.Partition))] {
			if m.foreignCkpt[file] == nil {
				m.foreignCkpt[file] = map[topicPartition]int64{}
			}
			m.foreignCkpt[file][tp] = off
		}
	}
}

// writeCheckpoint writes one of the offset checkpoint files with entries,
// plus the entries of foreign partitions it held when the dir was opened:
// Strata never drops what it cannot account for.
func (m *Manager) writeCheckpoint(file string, entries map[topicPartition]int64) error {
	for tp, off := range m.foreignCkpt[file] {
		if _, ok := entries[tp]; !ok {
			entries[tp] = off
		}
	}
	return writeOffsetCheckpoint(m.fsys, filepath.Join(m.dir, file), entries)
}

// writeRegistry replaces strata-topics.json with topics and the deletions
// still in progress. Call under adminMu.
func (m *Manager) writeRegistry(topics []registryTopic) error {
	return writeRegistry(m.fsys, m.dir, topics, append([]registryTopic(nil), m.deleting...))
}
