// Package scenarios holds scenarios.json, the scenario data (records, headers, the
// cross-client set, counts, partition counts, group name) every runner reads: the Go
// runners through this embed, the Python, kafkajs and Java runners from the file itself.
package scenarios

import _ "embed"

// JSON is scenarios.json's content.
//
//go:embed scenarios.json
var JSON []byte
