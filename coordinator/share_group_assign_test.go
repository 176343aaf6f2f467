package coordinator

import (
	"encoding/base64"
	"fmt"
	"testing"
)

// TestShareAssignorAsKafka44 replays member sequences whose target
// assignments Kafka 4.4.0 logged (its GroupMetadataManager's "new
// assignment state" lines, one 3-partition topic, members joining
// one by one, then one leaving) and checks that the assignor, walking
// Java's hash orders, picks the same partitions: which partition a member
// gives up depends on the topic id.
func TestShareAssignorAsKafka44(t *testing.T) {
	type step struct {
		members []string
		want    map[string][]int32
	}
	for _, run := range []struct {
		topic string
		steps []step
	}{
		{"kftUK5EaSj2jC9Xc6UUotw", []step{
			{[]string{"member-a"}, map[string][]int32{"member-a": {0, 1, 2}}},
			{[]string{"member-a", "member-b"}, map[string][]int32{"member-a": {0, 2}, "member-b": {1}}},
		}},
		{"zxTtERnlSYO_8ozS9ZgQGw", []step{
			{[]string{"member-a"}, map[string][]int32{"member-a": {0, 1, 2}}},
			{[]string{"member-a", "member-b"}, map[string][]int32{"member-a": {0, 1}, "member-b": {2}}},
			{[]string{"member-a", "member-b", "member-c"}, map[string][]int32{"member-a": {0}, "member-b": {2}, "member-c": {1}}},
			{[]string{"member-a", "member-b"}, map[string][]int32{"member-a": {0, 1}, "member-b": {2}}},
		}},
	} {
		raw, err := base64.RawURLEncoding.DecodeString(run.topic)
		if err != nil {
			t.Fatal(err)
		}
		var id [16]byte
		copy(id[:], raw)
		target := map[string]partitionSet{}
		for i, st := range run.steps {
			var ms []shareAssignMember
			for _, m := range st.members {
				ms = append(ms, shareAssignMember{id: m, topics: [][16]byte{id}, old: target[m]})
			}
			target = assignShareGroup(ms, func([16]byte) int32 { return 3 }, func([16]byte, int32) bool { return true })
			for m, want := range st.want {
				if got := target[m][id]; fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("topic %s step %d: %s got %v, Kafka %v", run.topic, i, m, got, want)
				}
			}
		}
	}
}
