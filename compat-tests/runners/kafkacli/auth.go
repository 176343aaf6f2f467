package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/strata-io/strata/compat-tests/runners/rt"
)

// clientConfig writes the security arguments as a client properties file
// (rt.Security.JavaProperties, newlines of the PEM values escaped as
// Properties.load reads them) with extra properties, for the console
// tools' --command-config.
func (e env) clientConfig(extra map[string]string) (string, error) {
	p, err := e.a.Security().JavaProperties()
	if err != nil {
		return "", err
	}
	for k, v := range extra {
		p[k] = v
	}
	var keys []string
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%s\n", k, strings.ReplaceAll(strings.TrimSpace(p[k]), "\n", `\n`))
	}
	dir, err := os.MkdirTemp("", "kafkacli-")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "client.properties")
	return path, os.WriteFile(path, []byte(b.String()), 0o600)
}

func (e env) auth() rt.Result {
	s := e.a.Security()
	cfg, err := e.clientConfig(nil)
	if err != nil {
		return rt.Failf("client properties: %v", err)
	}
	defer os.RemoveAll(filepath.Dir(cfg))
	if _, err := e.produce(rt.AuthRecords(), "", "--command-config", cfg); err != nil {
		return rt.Failf("%s: produce: %v", s, err)
	}
	n := len(rt.AuthRecords())
	args := append(e.bs(), "--topic", e.a.Topic, "--partition", "0", "--offset", "earliest",
		"--max-messages", strconv.Itoa(n), "--timeout-ms", "15000", "--command-config", cfg)
	out, serr, err := e.tool(nil, 40*time.Second, consumerCmd, append(args, consumerProps...)...)
	if err != nil {
		return rt.AuthResult(s, fmt.Errorf("kafka-console-consumer: %v: %s", err, why(serr)), nil)
	}
	got, err := parseConsumer(out)
	if err == nil && len(got) != n {
		err = fmt.Errorf("kafka-console-consumer: %d of %d records: %s", len(got), n, why(serr))
	}
	return rt.AuthResult(s, err, got)
}

// aclAllowed produces the auth records and consumes them back with the
// console consumer in the scenario's group (groupConsume).
func (e env) aclAllowed() rt.Result {
	s := e.a.Security()
	cfg, err := e.clientConfig(nil)
	if err != nil {
		return rt.Failf("client properties: %v", err)
	}
	defer os.RemoveAll(filepath.Dir(cfg))
	if _, err := e.produce(rt.AuthRecords(), "", "--command-config", cfg); err != nil {
		return rt.Failf("%s: produce: %v", s, err)
	}
	got, err := e.groupConsume(len(rt.AuthRecords()), "--command-config", cfg)
	return rt.AuthResult(s, err, got)
}

// authRefused produces one record with the console producer, whose
// metadata wait (max.block.ms) ends within rt.RefusalBound.
func (e env) authRefused() rt.Result {
	block := rt.RefusalBound - 5*time.Second
	cfg, err := e.clientConfig(map[string]string{"max.block.ms": strconv.FormatInt(block.Milliseconds(), 10)})
	if err != nil {
		return rt.Failf("client properties: %v", err)
	}
	defer os.RemoveAll(filepath.Dir(cfg))
	args := append(e.bs(), "--topic", e.a.Topic, "--command-config", cfg)
	_, serr, err := e.tool([]byte("refused\n"), rt.RefusalBound+20*time.Second, producerCmd, args...)
	if err != nil && strings.Contains(err.Error(), "timed out") {
		return rt.RefusedResult(e.a.Scenario, nil, true)
	}
	if err == nil && !strings.Contains(serr, "ERROR") && !strings.Contains(serr, "Exception") {
		return rt.RefusedResult(e.a.Scenario, nil, false)
	}
	return rt.RefusedResult(e.a.Scenario, errors.New(why(serr)), false)
}

// aclGroupDenied runs the console consumer in the scenario's group
// (groupConsume); the error is what it logged.
func (e env) aclGroupDenied() rt.Result {
	cfg, err := e.clientConfig(nil)
	if err != nil {
		return rt.Failf("client properties: %v", err)
	}
	defer os.RemoveAll(filepath.Dir(cfg))
	_, err = e.groupConsume(len(rt.AuthRecords()), "--command-config", cfg)
	return rt.GroupRefusedResult(e.a.Topic, err, false)
}
