package storage

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"

	"github.com/strata-io/strata/storage/vfs"
)

// registryFile lists the topics of a log.dir. Kafka keeps this in the
// metadata log (KRaft) or ZooKeeper; a single broker keeps it in one JSON
// file, rewritten atomically on every change.
const registryFile = "strata-topics.json"

const registryVersion = 1

// partitionMetadataFile is Kafka's per-partition topic id file.
const partitionMetadataFile = "partition.metadata"

// deleteDirSuffix marks a partition directory being deleted, as Kafka names
// them <topic>-<partition>.<uuid>-delete; leftovers are removed on open.
const deleteDirSuffix = "-delete"

// registry is the JSON layout of strata-topics.json:
//
//	{"version":1,"topics":[{"name":"t","id":"<Kafka uuid string>","partitions":3,"configs":{"k":"v"}}],
//	 "deleted":[{"name":"old","id":"<uuid>","partitions":1}]}
//
// Deleted lists topics whose deletion was decided (they left "topics") but
// whose partition directories may still be on disk: only a directory named
// for such a topic whose partition.metadata holds its id is known garbage,
// removed on the next open; any other directory is left alone.
//
// Topics adopted from Kafka also carry "leader_epochs":[...] (one per
// partition) until rewritten.
type registry struct {
	Version int             `json:"version"`
	Topics  []registryTopic `json:"topics"`
	Deleted []registryTopic `json:"deleted,omitempty"`
}

type registryTopic struct {
	Name       string            `json:"name"`
	IDString   string            `json:"id"`
	Partitions int32             `json:"partitions"`
	Configs    map[string]string `json:"configs,omitempty"`
	// LeaderEpochs, written only when adopting a Kafka log dir, is the
	// epoch each partition is led with from then on. Every open records
	// it in the partition's leader-epoch-checkpoint (when newer), so it may
	// go when the next admin change rewrites the registry.
	LeaderEpochs []int32 `json:"leader_epochs,omitempty"`
	// NotHosted lists the partitions this log dir holds no log of: in a
	// cluster, the ones this node is not a replica of.
	NotHosted []int32 `json:"not_hosted,omitempty"`

	ID [16]byte `json:"-"`
}

// readRegistry loads the topic registry and its deleted topics; a missing
// file means none of either.
func readRegistry(fsys vfs.FS, dir string) (topics, deleted []registryTopic, err error) {
	path := filepath.Join(dir, registryFile)
	data, err := slurpFile(fsys, path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("topic registry %s: %w", path, err)
	}
	var reg registry
	if err := json.Unmarshal(data, &reg); err != nil {
		return nil, nil, corruptionf("topic registry %s: %w", path, err)
	}
	if reg.Version != registryVersion {
		return nil, nil, fmt.Errorf("topic registry %s: unsupported version %d", path, reg.Version)
	}
	seen := make(map[string]bool, len(reg.Topics))
	for i := range reg.Topics {
		if seen[reg.Topics[i].Name] {
			return nil, nil, fmt.Errorf("topic registry %s: topic %q duplicated", path, reg.Topics[i].Name)
		}
		seen[reg.Topics[i].Name] = true
	}
	for _, list := range [][]registryTopic{reg.Topics, reg.Deleted} {
		for i := range list {
			if err := list[i].parse(); err != nil {
				return nil, nil, corruptionf("topic registry %s: %w", path, err)
			}
		}
	}
	return reg.Topics, reg.Deleted, nil
}

// parse validates an entry read from the file and fills in ID.
func (rt *registryTopic) parse() error {
	if err := ValidateTopicName(rt.Name); err != nil {
		return err
	}
	if rt.Partitions < 1 || (rt.LeaderEpochs != nil && len(rt.LeaderEpochs) != int(rt.Partitions)) {
		return fmt.Errorf("topic %q with %d partitions and %d leader epochs", rt.Name, rt.Partitions, len(rt.LeaderEpochs))
	}
	for _, p := range rt.NotHosted {
		if p < 0 || p >= rt.Partitions {
			return fmt.Errorf("topic %q with %d partitions does not host partition %d", rt.Name, rt.Partitions, p)
		}
	}
	id, err := parseUUID(rt.IDString)
	if err != nil || id == ([16]byte{}) {
		return fmt.Errorf("topic %q: bad id %q", rt.Name, rt.IDString)
	}
	rt.ID = id
	return nil
}

// writeRegistry atomically replaces the registry with topics and deleted
// (each sorted by name).
func writeRegistry(fsys vfs.FS, dir string, topics, deleted []registryTopic) error {
	for _, list := range [][]registryTopic{topics, deleted} {
		sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
		for i := range list {
			list[i].IDString = uuidString(list[i].ID)
		}
	}
	data, err := json.MarshalIndent(registry{Version: registryVersion, Topics: topics, Deleted: deleted}, "", "  ")
	if err != nil {
		return fmt.Errorf("topic registry: %w", err)
	}
	if err := replaceFile(fsys, filepath.Join(dir, registryFile), append(data, '\n')); err != nil {
		return fmt.Errorf("topic registry: %w", err)
	}
	return nil
}

// registryEntry describes t with the given partition count: the ones its
// current snapshot holds no log of are not hosted.
func registryEntry(t *Topic, partitions int) registryTopic {
	rt := registryTopic{Name: t.Name, ID: t.ID, Partitions: int32(partitions), Configs: t.ConfigMap()}
	for i := range int32(partitions) {
		if t.Partition(i) == nil {
			rt.NotHosted = append(rt.NotHosted, i)
		}
	}
	return rt
}

// partitionMetadata is the content of partition.metadata in Kafka's format
// (PartitionMetadataFile).
func partitionMetadata(id [16]byte) []byte {
	return []byte("version: 0\ntopic_id: " + uuidString(id) + "\n")
}

// ensurePartitionMetadata writes pdir/partition.metadata unless it already
// holds id. A different topic id means the directory belongs to another
// topic of the same name (Kafka's InconsistentTopicIdException).
func ensurePartitionMetadata(fsys vfs.FS, pdir string, id [16]byte) error {
	path := filepath.Join(pdir, partitionMetadataFile)
	want := partitionMetadata(id)
	data, err := slurpFile(fsys, path)
	switch {
	case err == nil:
		got, perr := parsePartitionMetadata(data)
		if perr != nil {
			return corruptionf("%s: %w", path, perr)
		}
		if got != id {
			return fmt.Errorf("%s: topic id %s does not match the registry's %s", path, uuidString(got), uuidString(id))
		}
		return nil
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s: %w", path, err)
	}
	return replaceFile(fsys, path, want)
}

// parsePartitionMetadata reads Kafka's "version: 0\ntopic_id: <uuid>\n".
func parsePartitionMetadata(data []byte) ([16]byte, error) {
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 2 {
		return [16]byte{}, fmt.Errorf("malformed partition metadata %q", data)
	}
	k, v, _ := strings.Cut(lines[0], ":")
	if strings.TrimSpace(k) != "version" || strings.TrimSpace(v) != "0" {
		return [16]byte{}, fmt.Errorf("unsupported partition metadata version line %q", lines[0])
	}
	k, v, _ = strings.Cut(lines[1], ":")
	if strings.TrimSpace(k) != "topic_id" {
		return [16]byte{}, fmt.Errorf("malformed partition metadata topic id line %q", lines[1])
	}
	return parseUUID(strings.TrimSpace(v))
}
