package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareVersionScript finalizes share.version 1, 0 and 1 again at addr
// (UpdateFeatures, a safe downgrade below the finalized level) and prints,
// at each level, what ShareGroupHeartbeat, ShareGroupDescribe, ShareFetch
// and ShareAcknowledge answer and which share keys ApiVersions advertises
// with which versions.
func shareVersionScript(t *testing.T, addr string) []string {
	t.Helper()
	var out []string
	say := func(format string, a ...any) { out = append(out, fmt.Sprintf(format, a...)) }
	finalized := func() int16 {
		seen, err := apiVersionsAt(addr, 3, nil, -1)
		if err != nil {
			t.Fatal(err)
		}
		return seen.finalized["share.version"]
	}
	set := func(level int16) {
		typ := int8(1)
		if level < finalized() {
			typ = 2
		}
		code, msg, _ := updateFeatures(t, addr, 1, false, featureUpdate{"share.version", level, typ})
		say("share.version=%d: %v %q", level, kerr.ErrorForCode(code), msg)
		if code != 0 {
			return
		}
		waitUntil(t, 15*time.Second, fmt.Sprintf("share.version finalized at %d", level), func() (bool, string) {
			l := finalized()
			return l == level, fmt.Sprint(l)
		})
	}
	advertised := func(level int16) {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version, req.ClientSoftwareName, req.ClientSoftwareVersion = 3, "strata-test", "1"
		kresp, err := request(addr, req)
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, k := range kresp.(*kmsg.ApiVersionsResponse).ApiKeys {
			switch kmsg.Key(k.ApiKey) {
			case kmsg.ShareGroupHeartbeat, kmsg.ShareGroupDescribe, kmsg.ShareFetch, kmsg.ShareAcknowledge:
				keys = append(keys, fmt.Sprintf("%s %d-%d", kmsg.NameForKey(k.ApiKey), k.MinVersion, k.MaxVersion))
			}
		}
		say("share.version %d advertises %s", level, strings.Join(keys, ", "))
	}
	group, member := "sv-g", "AAAAAAAAAAAAAAAAAAAAAA"
	codes := func(level int16, id string) {
		hb := kmsg.NewPtrShareGroupHeartbeatRequest()
		hb.Version, hb.GroupID, hb.MemberID, hb.MemberEpoch, hb.SubscribedTopicNames = 1, group, id, 0, []string{"sv-t"}
		d := kmsg.NewPtrShareGroupDescribeRequest()
		d.Version, d.GroupIDs = 1, []string{group}
		f := kmsg.NewPtrShareFetchRequest()
		f.Version, f.GroupID, f.MemberID, f.ShareSessionEpoch, f.MaxBytes, f.MaxRecords, f.BatchSize = 1, &group, &id, 0, 1<<20, 10, 10
		a := kmsg.NewPtrShareAcknowledgeRequest()
		a.Version, a.GroupID, a.MemberID, a.ShareSessionEpoch = 1, &group, &id, 1
		var line []string
		for _, req := range []kmsg.Request{hb, d, f, a} {
			resp, err := request(addr, req)
			if err != nil {
				t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
			}
			var code int16
			var msg *string
			switch r := resp.(type) {
			case *kmsg.ShareGroupHeartbeatResponse:
				code, msg = r.ErrorCode, r.ErrorMessage
			case *kmsg.ShareGroupDescribeResponse:
				code, msg = r.Groups[0].ErrorCode, r.Groups[0].ErrorMessage
			case *kmsg.ShareFetchResponse:
				code, msg = r.ErrorCode, r.ErrorMessage
			case *kmsg.ShareAcknowledgeResponse:
				code, msg = r.ErrorCode, r.ErrorMessage
			}
			line = append(line, fmt.Sprintf("%s %v %v", kmsg.NameForKey(req.Key()), kerr.ErrorForCode(code), msg != nil))
		}
		say("share.version %d: %s", level, strings.Join(line, "; "))
	}
	// heartbeat joins, once the group coordinator has loaded (a fresh
	// Kafka node answers NOT_COORDINATOR until FindCoordinator has created
	// __consumer_offsets and it has loaded).
	heartbeat := func(what string) {
		fc := kmsg.NewPtrFindCoordinatorRequest()
		fc.Version, fc.CoordinatorKeys = 4, []string{group}
		hb := kmsg.NewPtrShareGroupHeartbeatRequest()
		hb.Version, hb.GroupID, hb.MemberID, hb.MemberEpoch, hb.SubscribedTopicNames = 1, group, member, 0, []string{"sv-t"}
		var code int16
		waitUntil(t, 30*time.Second, "a heartbeat the coordinator answers", func() (bool, string) {
			if _, err := request(addr, fc); err != nil {
				t.Fatal(err)
			}
			resp, err := request(addr, hb)
			if err != nil {
				t.Fatal(err)
			}
			code = resp.(*kmsg.ShareGroupHeartbeatResponse).ErrorCode
			return code != kerr.NotCoordinator.Code && code != kerr.CoordinatorLoadInProgress.Code && code != kerr.CoordinatorNotAvailable.Code, fmt.Sprint(code)
		})
		say("%s: heartbeat %v", what, kerr.ErrorForCode(code))
	}
	set(1)
	heartbeat("share.version 1")
	advertised(1)
	set(0)
	codes(0, member)
	advertised(0)
	set(1)
	heartbeat("share.version 1 again")
	return out
}

// TestShareVersionAsKafka44 runs shareVersionScript against a Kafka 4.4.0
// control (one KRaft node, share.version finalized at 2) and Strata, and
// compares every line.
func TestShareVersionAsKafka44(t *testing.T) {
	e2e(t)
	kafkaAddr := shareKafka44(t)
	p := startBroker(t, "")
	want, got := shareVersionScript(t, kafkaAddr), shareVersionScript(t, p.addr)
	if len(got) != len(want) {
		t.Fatalf("strata printed %d lines, kafka %d:\n%s\n---\n%s", len(got), len(want), strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d:\nstrata %s\nkafka  %s", i, got[i], want[i])
		}
	}
	t.Logf("kafka:\n%s", strings.Join(want, "\n"))
}
