package storage

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"

	"go.uber.org/zap"

	"github.com/strata-io/strata/internal/configdef"
	"github.com/strata-io/strata/storage/kraftmeta"
	"github.com/strata-io/strata/storage/vfs"
)

// adoptKafkaLogDir builds the topic registry of a log dir that Apache
// Kafka (KRaft, one combined node) wrote: when there is no
// strata-topics.json but a __cluster_metadata-0, the topics (names, ids,
// partition counts, configs) and the leader epochs to take over at (kept in
// the registry until every partition recorded them) come from Kafka's
// metadata log (kraftmeta), its dynamic broker configs become
// strata-broker-configs.json, the end of its producer id blocks is reserved
// through opts.ReserveProducerIDs, and the registry is written last, so an
// interrupted adoption is redone on the next start. __cluster_metadata-0
// is only read. It returns nil when there is nothing to adopt.
func adoptKafkaLogDir(fsys vfs.FS, dir string, defaults Config, opts ManagerOptions, logger *zap.Logger) ([]registryTopic, error) {
	if _, err := fsys.Stat(filepath.Join(dir, registryFile)); err == nil {
		return nil, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("topic registry: %w", err)
	}
	mdir := filepath.Join(dir, kraftmeta.DirName)
	if _, err := fsys.Stat(mdir); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("adopt Kafka log dir: %w", err)
	}
	img, err := kraftmeta.Load(fsys, mdir)
	if err != nil {
		return nil, fmt.Errorf("adopt Kafka log dir: %w", err)
	}
	for _, bad := range img.BadSnapshot {
		logger.Warn("Kafka metadata snapshot not whole, using an older one", zap.String("reason", bad))
	}
	if img.InvalidTail != "" {
		logger.Warn("Kafka metadata log ends in an invalid batch, read up to it", zap.String("reason", img.InvalidTail))
	}
	reg := make([]registryTopic, 0, len(img.Topics))
	for _, t := range img.Topics {
		if _, err := defaults.WithTopicConfigs(t.Configs); err != nil {
			return nil, fmt.Errorf("adopt Kafka topic %s: %w", t.Name, err)
		}
		rt := registryTopic{Name: t.Name, ID: t.ID, Partitions: int32(len(t.Partitions)), Configs: t.Configs,
			LeaderEpochs: make([]int32, len(t.Partitions))}
		for i, p := range t.Partitions {
			rt.LeaderEpochs[i] = takeoverEpoch(p, opts.NodeID)
		}
		reg = append(reg, rt)
		logger.Info("adopted Kafka topic", zap.String("topic", t.Name), zap.String("topic_id", uuidString(t.ID)),
			zap.Int("partitions", len(t.Partitions)), zap.Any("configs", t.Configs), zap.Int32s("leader_epochs", rt.LeaderEpochs))
	}
	if err := adoptKafkaBrokerConfigs(fsys, dir, img.BrokerConfigs, opts.NodeID, logger); err != nil {
		return nil, err
	}
	if opts.ReserveProducerIDs != nil && img.NextProducerID > 0 {
		if err := opts.ReserveProducerIDs(img.NextProducerID); err != nil {
			return nil, fmt.Errorf("adopt Kafka log dir: reserve producer ids below %d: %w", img.NextProducerID, err)
		}
	}
	if err := writeRegistry(fsys, dir, reg, nil); err != nil {
		return nil, fmt.Errorf("adopt Kafka log dir: %w", err)
	}
	logger.Info("adopted Kafka log dir", zap.String("dir", dir), zap.Int("topics", len(reg)),
		zap.String("snapshot", img.Snapshot), zap.Int64("metadata_end_offset", img.EndOffset),
		zap.Int("metadata_records", img.Records), zap.Int("skipped_records", img.Skipped),
		zap.Int64("next_producer_id", img.NextProducerID))
	return reg, nil
}

// takeoverEpoch is the leader epoch this node leads an adopted partition
// with: Kafka's own if it still names this node leader, else the next one,
// as the election Kafka runs when its fenced broker comes back (a clean
// shutdown leaves leader -1).
func takeoverEpoch(p kraftmeta.Partition, nodeID int32) int32 {
	if p.Leader == nodeID {
		return p.LeaderEpoch
	}
	return p.LeaderEpoch + 1
}

// adoptKafkaBrokerConfigs writes Kafka's dynamic broker configs (the
// cluster default and this node's) that Strata can apply dynamically to
// strata-broker-configs.json, unless that file exists; the others are
// logged and left.
func adoptKafkaBrokerConfigs(fsys vfs.FS, dir string, configs map[string]map[string]string, nodeID int32, logger *zap.Logger) error {
	path := filepath.Join(dir, brokerConfigsFile)
	if _, err := fsys.Stat(path); err == nil {
		return nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("broker configs %s: %w", path, err)
	}
	d := brokerConfigsJSON{Version: 1, Default: map[string]string{}, Broker: map[string]string{}}
	for resource, out := range map[string]map[string]string{"": d.Default, strconv.Itoa(int(nodeID)): d.Broker} {
		keys := make([]string, 0, len(configs[resource]))
		for k := range configs[resource] {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			v := configs[resource][k]
			topicKey, scale, ok := configdef.BrokerSynonymOf(k)
			if ok {
				_, err := validateTopicConfig(topicKey, configdef.ScaleBrokerValue(v, scale))
				ok = err == nil
			}
			if !ok {
				logger.Warn("Kafka dynamic broker config not adopted: Strata cannot apply it", zap.String("resource", resource),
					zap.String("config", k), zap.String("value", v))
				continue
			}
			out[k] = v
		}
	}
	if len(d.Default)+len(d.Broker) == 0 {
		return nil
	}
	data, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return fmt.Errorf("adopt Kafka broker configs: %w", err)
	}
	if err := replaceFile(fsys, path, append(data, '\n')); err != nil {
		return fmt.Errorf("adopt Kafka broker configs: %w", err)
	}
	logger.Info("adopted Kafka dynamic broker configs", zap.Any("default", d.Default), zap.Any("broker", d.Broker))
	return nil
}
