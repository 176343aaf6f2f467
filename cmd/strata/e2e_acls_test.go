package main

import (
	"strings"
	"testing"
)

// TestKafkaACLsWithoutAuthorizer runs Kafka's kafka-acls --list and --add
// against a broker with no authorizer.class.name: both fail with the
// SecurityDisabledException and message an unsecured Kafka gives. Kafka
// 4.4's kafka-acls --add describes the ACLs it is adding before it creates
// them, so it stops at DescribeAcls' answer, the message of --list.
func TestKafkaACLsWithoutAuthorizer(t *testing.T) {
	e2e(t)
	b := startBroker(t, "")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--list"}, "SecurityDisabledException: No Authorizer is configured on the broker"},
		{[]string{"--add", "--allow-principal", "User:alice", "--operation", "Read", "--topic", "t"}, "SecurityDisabledException: No Authorizer is configured on the broker"},
	} {
		stdout, stderr, err := runKafkaTool(t, kafkaToolsHome(t), "", "org.apache.kafka.tools.AclCommand", append([]string{"--bootstrap-server", b.addr}, tc.args...)...)
		out := stdout + stderr
		if err == nil || !strings.Contains(out, "Error while executing ACL command: org.apache.kafka.common.errors."+tc.want) {
			t.Fatalf("kafka-acls %v: %v\n%s", tc.args, err, out)
		}
	}
}
