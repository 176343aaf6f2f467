package coordinator

import (
	"fmt"
	"strings"
)

// formatConsumerRecord prints a KIP-848 record for the scripts: its type,
// group and member, and the fields that matter.
func formatConsumerRecord(r kv, topicName func([16]byte) string) string {
	k, err := decodeCGKey(r.key)
	if err != nil {
		return err.Error()
	}
	name := map[int16]string{cgMetadataType: "cg-group", cgPartitionMetadataType: "cg-partitions", cgMemberType: "cg-member",
		cgTargetMetadataType: "cg-target-epoch", cgTargetMemberType: "cg-target", cgCurrentType: "cg-current", cgRegexType: "cg-regex"}[k.typ]
	id := k.group
	if k.sub != "" {
		id += "/" + k.sub
	}
	if r.value == nil {
		return name + " " + id + " tombstone"
	}
	parts := func(ts []cgTopicPartitions) string {
		var out []string
		for _, t := range ts {
			out = append(out, topicName(t.topicID)+":"+joinInts(t.partitions))
		}
		return "(" + strings.Join(out, " ") + ")"
	}
	switch k.typ {
	case cgMetadataType:
		v, _ := decodeCGMetadata(r.value)
		return fmt.Sprintf("%s %s epoch=%d", name, id, v.epoch)
	case cgMemberType:
		v, _ := decodeCGMember(r.value)
		return fmt.Sprintf("%s %s topics=(%s) assignor=%s", name, id, strings.Join(v.topics, ","), deref(v.serverAssignor))
	case cgTargetMetadataType:
		v, _ := decodeCGTargetMetadata(r.value)
		return fmt.Sprintf("%s %s epoch=%d", name, id, v.assignmentEpoch)
	case cgTargetMemberType:
		v, _ := decodeCGTargetMember(r.value)
		return fmt.Sprintf("%s %s %s", name, id, parts(v.topics))
	case cgRegexType:
		v, _ := decodeCGRegex(r.value)
		return fmt.Sprintf("%s %s topics=(%s) version=%d", name, id, strings.Join(v.topics, ","), v.version)
	case cgCurrentType:
		v, _ := decodeCGCurrent(r.value)
		return fmt.Sprintf("%s %s epoch=%d prev=%d state=%d assigned=%s revoking=%s", name, id, v.memberEpoch,
			v.previousMemberEpoch, v.state, parts(v.assigned), parts(v.revoking))
	}
	return fmt.Sprintf("%s %s", name, id)
}
