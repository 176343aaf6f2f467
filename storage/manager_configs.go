package storage

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"

	"github.com/strata-io/strata/internal/configdef"
	"github.com/strata-io/strata/internal/kafkaerr"
)

// brokerConfigsFile holds the dynamic broker configs (AlterConfigs on a
// BROKER resource) of a log.dir. Kafka keeps them in the metadata log; a
// single broker keeps them in one JSON file, rewritten atomically:
//
//	{"version":1,"default":{"log.retention.ms":"3600000"},"broker":{}}
//
// "default" is the cluster default (resource name ""), "broker" this
// node's own (resource name = node.id), which wins.
const brokerConfigsFile = "strata-broker-configs.json"

type brokerConfigsJSON struct {
	Version int               `json:"version"`
	Default map[string]string `json:"default"`
	Broker  map[string]string `json:"broker"`
}

// ConfigMap returns a copy of the topic's config overrides.
func (t *Topic) ConfigMap() map[string]string {
	t.cfgMu.RLock()
	defer t.cfgMu.RUnlock()
	return maps.Clone(t.Configs)
}

// LogConfig is the config the topic's logs run with: the broker defaults
// (static and dynamic) overlaid with the topic's overrides.
func (t *Topic) LogConfig() Config {
	t.cfgMu.RLock()
	defer t.cfgMu.RUnlock()
	return t.cfg
}

// AlterTopicConfigs replaces a topic's whole set of config overrides (the
// caller merges for incremental changes), validated as at creation,
// persisted in the registry and applied to the open logs.
// kerr.UnknownTopicOrPartition, kerr.InvalidConfig.
func (m *Manager) AlterTopicConfigs(name string, configs map[string]string, validateOnly bool) error {
	m.adminMu.Lock()
	defer m.adminMu.Unlock()
	if err := m.ensureOpen(); err != nil {
		return err
	}
	t := m.Topic(name)
	if t == nil {
		return fmt.Errorf("topic %s: %w", name, kerr.UnknownTopicOrPartition)
	}
	cfg, err := m.defaults.WithTopicConfigs(configs)
	if err != nil {
		return fmt.Errorf("topic %s: %w", name, err)
	}
	if validateOnly {
		return nil
	}
	configs = maps.Clone(configs)
	if configs == nil {
		configs = map[string]string{}
	}
	t.cfgMu.Lock()
	oldConfigs, oldCfg := t.Configs, t.cfg
	t.Configs, t.cfg = configs, cfg
	t.cfgMu.Unlock()
	if err := m.writeRegistry(m.registryWith(t, int(t.PartitionCount()))); err != nil {
		t.cfgMu.Lock()
		t.Configs, t.cfg = oldConfigs, oldCfg
		t.cfgMu.Unlock()
		return fmt.Errorf("alter configs of topic %s: %w", name, storageFailure(err))
	}
	for _, p := range t.Partitions() {
		p.Log.SetConfig(cfg)
	}
	m.logger.Info("altered topic configs", zap.String("topic", name), zap.Any("configs", configs))
	return nil
}

// BrokerConfigs returns copies of the dynamic broker configs: the cluster
// default ones and this node's own.
func (m *Manager) BrokerConfigs() (clusterDefault, node map[string]string) {
	m.adminMu.Lock()
	defer m.adminMu.Unlock()
	d := m.dynamic()
	return maps.Clone(d.Default), maps.Clone(d.Broker)
}

func (m *Manager) dynamic() brokerConfigsJSON {
	d := brokerConfigsJSON{Version: 1, Default: map[string]string{}, Broker: map[string]string{}}
	maps.Copy(d.Default, m.brokerDefault)
	maps.Copy(d.Broker, m.brokerConfigs)
	return d
}

// AlterBrokerConfigs replaces the whole set of dynamic broker configs of
// the cluster default (node false) or of this node (node true). Only
// broker configs that are synonyms of topic configs can change
// dynamically (Kafka's DynamicLogConfig), and per node a listener's key
// and trust stores (listener.name.<l>.ssl.keystore.location, ..., kept as
// they are: the broker checks them); any other key is
// kerr.InvalidRequest, as is an invalid value (as Kafka). The new
// defaults apply to every topic at once and persist in
// strata-broker-configs.json.
func (m *Manager) AlterBrokerConfigs(configs map[string]string, node, validateOnly bool) error {
	m.adminMu.Lock()
	defer m.adminMu.Unlock()
	if err := m.ensureOpen(); err != nil {
		return err
	}
	keys := make([]string, 0, len(configs))
	for k := range configs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if configdef.IsSSLReconfigurable(k) {
			return kafkaerr.New(kerr.InvalidRequest, "These security configs can be dynamically updated only per-listener using the listener prefix: HashSet(%s)", k)
		}
		if _, _, ok := configdef.ListenerSSLKey(k); ok {
			// The listener's TLS is the broker's to check (its stores are
			// files storage does not read); here it is kept.
			if !node {
				return kafkaerr.New(kerr.InvalidRequest, "Cannot update these configs at default cluster level, broker id must be specified: Set(%s)", k)
			}
			continue
		}
		topicKey, scale, ok := configdef.BrokerSynonymOf(k)
		if !ok {
			return kafkaerr.New(kerr.InvalidRequest, "Cannot update these configs dynamically: [%s]", k)
		}
		if err := validateBrokerConfig(k, configs[k], topicKey, scale); err != nil {
			return err
		}
	}
	d := m.dynamic()
	if node {
		d.Broker = maps.Clone(configs)
	} else {
		d.Default = maps.Clone(configs)
	}
	defaults, err := m.effectiveDefaults(d)
	if err != nil {
		return err
	}
	// Every topic must still be valid under the new defaults.
	type change struct {
		t   *Topic
		cfg Config
	}
	var changes []change
	for _, t := range m.Topics() {
		cfg, err := defaults.WithTopicConfigs(t.ConfigMap())
		if err != nil {
			return fmt.Errorf("topic %s under the new broker defaults: %w", t.Name, err)
		}
		changes = append(changes, change{t, cfg})
	}
	if validateOnly {
		return nil
	}
	data, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return fmt.Errorf("broker configs: %w", err)
	}
	if err := replaceFile(m.fsys, filepath.Join(m.dir, brokerConfigsFile), append(data, '\n')); err != nil {
		return fmt.Errorf("broker configs: %w", storageFailure(err))
	}
	m.brokerDefault, m.brokerConfigs = d.Default, d.Broker
	m.defaults = defaults
	for _, c := range changes {
		c.t.cfgMu.Lock()
		c.t.cfg = c.cfg
		c.t.cfgMu.Unlock()
		for _, p := range c.t.Partitions() {
			p.Log.SetConfig(c.cfg)
		}
	}
	m.logger.Info("altered dynamic broker configs", zap.Bool("node", node), zap.Any("configs", configs))
	return nil
}

// validateBrokerConfig checks the value of broker config key, the synonym
// of topicKey: as the broker config it is, then as the topic config value
// it gives. A value refused is INVALID_REQUEST with ConfigException's
// message, as Kafka's ConfigAdminManager answers a dynamic broker config
// that does not validate.
func validateBrokerConfig(key, value, topicKey string, scale int64) error {
	var err error
	if def, ok := configdef.BrokerDef(key); ok {
		_, err = validateConfig(def, value)
	}
	if err == nil {
		_, err = validateTopicConfig(topicKey, configdef.ScaleBrokerValue(value, scale))
	}
	if err != nil {
		return kafkaerr.New(kerr.InvalidRequest, "%s", kafkaerr.Message(err))
	}
	return nil
}

// effectiveDefaults overlays the dynamic broker configs (this node's over
// the cluster default's) on the static defaults.
func (m *Manager) effectiveDefaults(d brokerConfigsJSON) (Config, error) {
	merged := maps.Clone(d.Default)
	if merged == nil {
		merged = map[string]string{}
	}
	maps.Copy(merged, d.Broker)
	cfg, err := m.static.WithTopicConfigs(configdef.BrokerToTopicConfigs(merged))
	if err != nil {
		return m.static, fmt.Errorf("dynamic broker configs: %w", err)
	}
	return cfg, nil
}

// loadBrokerConfigs reads strata-broker-configs.json (missing = none) and
// sets the effective defaults. Called by OpenManager before any topic.
func (m *Manager) loadBrokerConfigs() error {
	path := filepath.Join(m.dir, brokerConfigsFile)
	data, err := slurpFile(m.fsys, path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("broker configs %s: %w", path, err)
	}
	var d brokerConfigsJSON
	if err := json.Unmarshal(data, &d); err != nil {
		return fmt.Errorf("broker configs %s: %w", path, err)
	}
	if d.Version != 1 {
		return fmt.Errorf("broker configs %s: unsupported version %d", path, d.Version)
	}
	defaults, err := m.effectiveDefaults(d)
	if err != nil {
		return fmt.Errorf("broker configs %s: %w", path, err)
	}
	m.brokerDefault, m.brokerConfigs = d.Default, d.Broker
	if m.brokerDefault == nil {
		m.brokerDefault = map[string]string{}
	}
	if m.brokerConfigs == nil {
		m.brokerConfigs = map[string]string{}
	}
	m.defaults = defaults
	return nil
}
