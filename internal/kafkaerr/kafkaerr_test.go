package kafkaerr

import (
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestMessage: a response's message is Kafka's alone, never the name and
// description franz-go's kerr.Error prints.
func TestMessage(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{New(kerr.InvalidRequest, "Invalid empty resource name"), "Invalid empty resource name"},
		{fmt.Errorf("topic t: %w", New(kerr.InvalidConfig, "Unknown topic config name: %s", "x")), "Unknown topic config name: x"},
		{fmt.Errorf("topic t: %w", kerr.UnknownTopicOrPartition), "topic t"},
		{fmt.Errorf("%w: %w", errors.New("disk gone"), kerr.KafkaStorageError), "disk gone"},
		{fmt.Errorf("log: %w: %w", kerr.KafkaStorageError, errors.New("closed")), "log: closed"},
		{kerr.ClusterAuthorizationFailed, kerr.ClusterAuthorizationFailed.Description},
		{errors.New("no code"), "no code"},
	} {
		if got := Message(tc.err); got != tc.want {
			t.Errorf("Message(%q) = %q, want %q", tc.err, got, tc.want)
		}
	}
	err := fmt.Errorf("wrapped: %w", New(kerr.InvalidConfig, "m"))
	if !errors.Is(err, kerr.InvalidConfig) || err.Error() != "wrapped: m" {
		t.Errorf("New's error %q does not carry INVALID_CONFIG or prints more than its message", err)
	}
}
