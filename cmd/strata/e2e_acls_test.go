package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestKafkaACLsWithoutAuthorizer runs Kafka's kafka-acls --list and --add
// against a broker with no authorizer.class.name: both fail with the
// SecurityDisabledException and message an unsecured Kafka gives.
func TestKafkaACLsWithoutAuthorizer(t *testing.T) {
	e2e(t)
	b := startBroker(t, "")
	home, err := filepath.Abs("../../compat-tests/.cache/kafka")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--list"}, "SecurityDisabledException: No Authorizer is configured on the broker"},
		{[]string{"--add", "--allow-principal", "User:alice", "--operation", "Read", "--topic", "t"}, "SecurityDisabledException: No Authorizer is configured."},
	} {
		argv := append([]string{"-Xmx256m", "-Dlog4j2.configurationFile=" + filepath.Join(home, "tools-log4j2.properties"),
			"-cp", filepath.Join(home, "libs") + "/*", "org.apache.kafka.tools.AclCommand", "--bootstrap-server", b.addr}, tc.args...)
		out, err := exec.Command("java", argv...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "Error while executing ACL command: org.apache.kafka.common.errors."+tc.want) {
			t.Fatalf("kafka-acls %v: %v\n%s", tc.args, err, out)
		}
	}
}
