package main

import (
	"fmt"
	"strings"
)

// unsupportedError is a key, set in the configuration, of a Kafka feature
// Strata does not have yet. Starting anyway would run without what the file
// asks for (encryption, authentication, authorization), so start-up stops.
type unsupportedError struct {
	Key, Value, Feature string
}

func (e *unsupportedError) Error() string {
	return fmt.Sprintf("configuration %s=%q: strata does not support %s yet", e.Key, e.Value, e.Feature)
}

// unsupportedKeys are refused when set to a non-empty value (empty is Kafka's
// default: the feature off), each with the feature it configures.
var unsupportedKeys = map[string]string{
	"create.topic.policy.class.name": "create topic policies",
	"alter.config.policy.class.name": "alter config policies",
	"client.quota.callback.class":    "client quotas",
}

// unsupportedFeature says which missing feature key configures, or "" when
// Strata reads or may ignore it. The sasl.* keys are read for each SASL
// listener (config_sasl.go), but for those naming custom classes; the
// ssl.* keys are read for each SSL listener (config_ssl.go) and mean
// nothing without one, as in Kafka. listener.name.<listener>. prefixes
// (and, for SASL, a mechanism after them) are looked through.
func unsupportedFeature(key, value string) string {
	if strings.TrimSpace(value) == "" {
		return ""
	}
	if rest, ok := strings.CutPrefix(key, "listener.name."); ok {
		_, rest, _ = strings.Cut(rest, ".")
		if f := unsupportedFeature(rest, value); f != "" {
			return f
		}
		if _, afterMechanism, ok := strings.Cut(rest, "."); ok {
			return saslUnsupported(afterMechanism, value)
		}
		return ""
	}
	if f := saslUnsupported(key, value); f != "" {
		return f
	}
	return unsupportedKeys[key]
}
