package storage

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/strata-io/strata/storage/vfs"
)

// metaPropertiesFile identifies a log directory: which cluster and node it
// belongs to (Kafka's MetaPropertiesEnsemble uses the same file).
const metaPropertiesFile = "meta.properties"

// metaPropertiesVersion 1 is the KRaft-era layout: node.id is required.
const metaPropertiesVersion = 1

// metaProperties is the content of meta.properties.
type metaProperties struct {
	ClusterID   string
	NodeID      int32
	DirectoryID string
}

// newUUID returns a random Kafka Uuid the way Kafka's Uuid.randomUuid does: a
// version 4 UUID, never the zero Uuid or the reserved metadata topic id
// (0, 1), and never one whose string form starts with '-' (it would look like
// a command-line flag).
func newUUID() ([16]byte, error) {
	for {
		var u [16]byte
		if _, err := rand.Read(u[:]); err != nil {
			return u, fmt.Errorf("random uuid: %w", err)
		}
		u[6] = u[6]&0x0f | 0x40 // version 4
		u[8] = u[8]&0x3f | 0x80 // IETF variant
		if u == ([16]byte{}) || u == ([16]byte{15: 1}) || strings.HasPrefix(uuidString(u), "-") {
			continue
		}
		return u, nil
	}
}

// uuidString renders a Uuid as Kafka does: URL-safe base64 without padding,
// 22 characters.
func uuidString(u [16]byte) string {
	return base64.RawURLEncoding.EncodeToString(u[:])
}

// parseUUID is the inverse of uuidString.
func parseUUID(s string) ([16]byte, error) {
	var u [16]byte
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != 16 {
		return u, corruptionf("malformed uuid %q", s)
	}
	copy(u[:], b)
	return u, nil
}

// parseProperties reads the subset of the Java properties format Kafka
// writes: "key=value" lines, '#' or '!' comments, blank lines.
func parseProperties(data []byte) (map[string]string, error) {
	props := make(map[string]string)
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("line %d: no '=' in %q", i+1, line)
		}
		props[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return props, nil
}

func formatProperties(props map[string]string) []byte {
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b bytes.Buffer
	b.WriteString("#\n#Written by Strata\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%s\n", k, props[k])
	}
	return b.Bytes()
}

// loadOrCreateMetaProperties reads dir/meta.properties, creating it with
// clusterID (a new cluster id when empty) and a new directory id on first
// start (created is then true). A stored node.id different from nodeID is
// an error: the directory belongs to another broker; so is a stored
// cluster.id other than a non-empty clusterID, with Kafka's message
// (MetaPropertiesEnsemble.verify): it belongs to another cluster.
func loadOrCreateMetaProperties(fsys vfs.FS, dir string, nodeID int32, clusterID string) (mp metaProperties, created bool, err error) {
	path := filepath.Join(dir, metaPropertiesFile)
	data, err := slurpFile(fsys, path)
	if errors.Is(err, fs.ErrNotExist) {
		mp, err := createMetaProperties(fsys, path, nodeID, clusterID)
		return mp, err == nil, err
	}
	if err != nil {
		return metaProperties{}, false, fmt.Errorf("%s: %w", path, err)
	}
	props, err := parseProperties(data)
	if err != nil {
		return metaProperties{}, false, corruptionf("%s: %w", path, err)
	}
	if v := props["version"]; v != strconv.Itoa(metaPropertiesVersion) {
		return metaProperties{}, false, fmt.Errorf("%s: unsupported version %q, want %d", path, v, metaPropertiesVersion)
	}
	id, err := strconv.ParseInt(props["node.id"], 10, 32)
	if err != nil {
		return metaProperties{}, false, corruptionf("%s: malformed node.id %q", path, props["node.id"])
	}
	if int32(id) != nodeID {
		return metaProperties{}, false, fmt.Errorf("%s: stored node.id %d does not match configured node.id %d", path, id, nodeID)
	}
	mp = metaProperties{ClusterID: props["cluster.id"], NodeID: nodeID, DirectoryID: props["directory.id"]}
	if _, err := parseUUID(mp.ClusterID); err != nil {
		return metaProperties{}, false, fmt.Errorf("%s: cluster.id: %w", path, err)
	}
	if clusterID != "" && mp.ClusterID != clusterID {
		return metaProperties{}, false, fmt.Errorf("invalid cluster.id in: %s. Expected %s, but read %s", dir, clusterID, mp.ClusterID)
	}
	if mp.DirectoryID != "" {
		if _, err := parseUUID(mp.DirectoryID); err != nil {
			return metaProperties{}, false, fmt.Errorf("%s: directory.id: %w", path, err)
		}
		return mp, false, nil
	}
	// Files written before directory ids existed get one now, as Kafka does.
	dirID, err := newUUID()
	if err != nil {
		return metaProperties{}, false, err
	}
	mp.DirectoryID = uuidString(dirID)
	props["directory.id"] = mp.DirectoryID
	if err := replaceFile(fsys, path, formatProperties(props)); err != nil {
		return metaProperties{}, false, fmt.Errorf("meta.properties: %w", err)
	}
	return mp, false, nil
}

func createMetaProperties(fsys vfs.FS, path string, nodeID int32, clusterID string) (metaProperties, error) {
	if clusterID == "" {
		id, err := newUUID()
		if err != nil {
			return metaProperties{}, err
		}
		clusterID = uuidString(id)
	}
	dirID, err := newUUID()
	if err != nil {
		return metaProperties{}, err
	}
	mp := metaProperties{ClusterID: clusterID, NodeID: nodeID, DirectoryID: uuidString(dirID)}
	props := map[string]string{
		"version":      strconv.Itoa(metaPropertiesVersion),
		"cluster.id":   mp.ClusterID,
		"node.id":      strconv.Itoa(int(nodeID)),
		"directory.id": mp.DirectoryID,
	}
	if err := replaceFile(fsys, path, formatProperties(props)); err != nil {
		return metaProperties{}, fmt.Errorf("meta.properties: %w", err)
	}
	return mp, nil
}
