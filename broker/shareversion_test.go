package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareKeyCodes sends ShareGroupHeartbeat, ShareGroupDescribe, ShareFetch,
// ShareAcknowledge, DescribeShareGroupOffsets, AlterShareGroupOffsets and
// DeleteShareGroupOffsets to the broker and returns each answer's error
// code (the described group's for the two describes).
func shareKeyCodes(t *testing.T, cl *kgo.Client, group string) [7]int16 {
	t.Helper()
	br := cl.SeedBrokers()[0]
	member := "AAAAAAAAAAAAAAAAAAAAAA"
	hb := kmsg.NewPtrShareGroupHeartbeatRequest()
	hb.GroupID, hb.MemberID, hb.MemberEpoch, hb.SubscribedTopicNames = group, member, 0, []string{"t"}
	d := kmsg.NewPtrShareGroupDescribeRequest()
	d.GroupIDs = []string{group}
	f := kmsg.NewPtrShareFetchRequest()
	f.GroupID, f.MemberID, f.ShareSessionEpoch, f.MaxBytes, f.MaxRecords, f.BatchSize = &group, &member, 0, 1<<20, 10, 10
	a := kmsg.NewPtrShareAcknowledgeRequest()
	a.GroupID, a.MemberID, a.ShareSessionEpoch = &group, &member, 1
	do := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	do.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: group}}
	ao := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	ao.GroupID = group
	de := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
	de.GroupID = group
	var out [7]int16
	for i, req := range []kmsg.Request{hb, d, f, a, do, ao, de} {
		resp, err := br.Request(testCtx(t), req)
		if err != nil {
			t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
		}
		switch r := resp.(type) {
		case *kmsg.ShareGroupHeartbeatResponse:
			out[i] = r.ErrorCode
		case *kmsg.ShareGroupDescribeResponse:
			out[i] = r.Groups[0].ErrorCode
		case *kmsg.ShareFetchResponse:
			out[i] = r.ErrorCode
		case *kmsg.ShareAcknowledgeResponse:
			out[i] = r.ErrorCode
		case *kmsg.DescribeShareGroupOffsetsResponse:
			out[i] = r.Groups[0].ErrorCode
		case *kmsg.AlterShareGroupOffsetsResponse:
			out[i] = r.ErrorCode
		case *kmsg.DeleteShareGroupOffsetsResponse:
			out[i] = r.ErrorCode
		}
	}
	return out
}

// setShareVersion finalizes share.version at level with UpdateFeatures
// (a safe downgrade when below the finalized level).
func setShareVersion(t *testing.T, cl *kgo.Client, level int16) {
	t.Helper()
	req := kmsg.NewPtrUpdateFeaturesRequest()
	req.TimeoutMillis = 30000
	u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
	u.Feature, u.MaxVersionLevel, u.UpgradeType = shareVersionFeature, level, 1
	if level < finalizedShareVersion(t, cl) {
		u.UpgradeType, u.AllowDowngrade = 2, true
	}
	req.FeatureUpdates = append(req.FeatureUpdates, u)
	resp, err := req.RequestWith(testCtx(t), cl)
	if err != nil || resp.ErrorCode != 0 {
		t.Fatalf("UpdateFeatures share.version=%d: %v %+v", level, err, resp)
	}
}

// finalizedShareVersion is the share.version ApiVersions answers finalized (0 when not).
func finalizedShareVersion(t *testing.T, cl *kgo.Client) int16 {
	t.Helper()
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range resp.SupportedFeatures {
		if s.Name == shareVersionFeature && (s.MinVersion != 0 || s.MaxVersion != 2) {
			t.Fatalf("share.version supported %d-%d, want 0-2", s.MinVersion, s.MaxVersion)
		}
	}
	for _, f := range resp.FinalizedFeatures {
		if f.Name == shareVersionFeature {
			return f.MaxVersionLevel
		}
	}
	return 0
}

// TestShareVersionGatesShareKeys: a new node finalizes share.version 1,
// with or without unstable.api.versions.enable; finalized at 0 (a safe
// downgrade) every share key answers UNSUPPORTED_VERSION first, as Kafka
// 4.4's KafkaApis, and at 1 again they serve.
func TestShareVersionGatesShareKeys(t *testing.T) {
	unsupported := [7]int16{35, 35, 35, 35, 35, 35, 35}
	b, _ := runBroker(t, shareBrokerConfig(t, t.TempDir()))
	cl := newClient(t, b)
	if v := finalizedShareVersion(t, cl); v != 2 {
		t.Fatalf("a new node finalizes share.version %d, want 2", v)
	}
	if !b.svc.shareDLQSupported() {
		t.Fatal("share.version 2 without dead-letter queues")
	}
	if got := shareKeyCodes(t, cl, "g"); got == unsupported || got[0] != 0 {
		t.Fatalf("share.version 2: codes %v, want the heartbeat served", got)
	}
	setShareVersion(t, cl, 1)
	if b.svc.shareDLQSupported() {
		t.Fatal("share.version 1 with dead-letter queues")
	}
	setShareVersion(t, cl, 0)
	if got := shareKeyCodes(t, cl, "g"); got != unsupported {
		t.Fatalf("share.version 0: codes %v, want %v", got, unsupported)
	}
	setShareVersion(t, cl, 1)
	if got := shareKeyCodes(t, cl, "g2"); got[0] != 0 {
		t.Fatalf("share.version 1 again: codes %v, want the heartbeat served", got)
	}

	cfg := shareBrokerConfig(t, t.TempDir())
	cfg.UnstableAPIVersions = false
	b2, _ := runBroker(t, cfg)
	cl2 := newClient(t, b2)
	if v := finalizedShareVersion(t, cl2); v != 2 {
		t.Fatalf("a new node without unstable.api.versions.enable finalizes share.version %d, want 2", v)
	}
	if got := shareKeyCodes(t, cl2, "g"); got[0] != 0 {
		t.Fatalf("without unstable.api.versions.enable: codes %v, want the heartbeat served", got)
	}
}

// shareGroupDenyCases are TestDenyAllAuthorizer's share group keys: each
// answers GROUP_AUTHORIZATION_FAILED, as Kafka 4.4's KafkaApis checks READ
// (DESCRIBE for the two describes, DELETE for DeleteShareGroupOffsets) on
// the group first.
func shareGroupDenyCases() []authzCase {
	group, member := "g", "AAAAAAAAAAAAAAAAAAAAAA"
	groupAuth := kerr.GroupAuthorizationFailed
	return []authzCase{
		{"ShareGroupHeartbeat", func() kmsg.Request {
			r := kmsg.NewPtrShareGroupHeartbeatRequest()
			r.GroupID, r.MemberID, r.SubscribedTopicNames = group, member, []string{"t"}
			return r
		}, 1, func(t *testing.T, resp kmsg.Response) {
			code(t, "top level", resp.(*kmsg.ShareGroupHeartbeatResponse).ErrorCode, groupAuth)
		}},
		{"ShareGroupDescribe", func() kmsg.Request {
			r := kmsg.NewPtrShareGroupDescribeRequest()
			r.GroupIDs = []string{group}
			return r
		}, 1, func(t *testing.T, resp kmsg.Response) {
			code(t, "group", resp.(*kmsg.ShareGroupDescribeResponse).Groups[0].ErrorCode, groupAuth)
		}},
		{"ShareFetch", func() kmsg.Request {
			r := kmsg.NewPtrShareFetchRequest()
			r.GroupID, r.MemberID, r.MaxBytes, r.MaxRecords, r.BatchSize = &group, &member, 1<<20, 10, 10
			return r
		}, 1, func(t *testing.T, resp kmsg.Response) {
			code(t, "top level", resp.(*kmsg.ShareFetchResponse).ErrorCode, groupAuth)
		}},
		{"ShareAcknowledge", func() kmsg.Request {
			r := kmsg.NewPtrShareAcknowledgeRequest()
			r.GroupID, r.MemberID, r.ShareSessionEpoch = &group, &member, 1
			return r
		}, 1, func(t *testing.T, resp kmsg.Response) {
			code(t, "top level", resp.(*kmsg.ShareAcknowledgeResponse).ErrorCode, groupAuth)
		}},
		{"DescribeShareGroupOffsets", func() kmsg.Request {
			r := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
			r.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: group}}
			return r
		}, 1, func(t *testing.T, resp kmsg.Response) {
			code(t, "group", resp.(*kmsg.DescribeShareGroupOffsetsResponse).Groups[0].ErrorCode, groupAuth)
		}},
		{"AlterShareGroupOffsets", func() kmsg.Request {
			r := kmsg.NewPtrAlterShareGroupOffsetsRequest()
			r.GroupID = group
			return r
		}, 0, func(t *testing.T, resp kmsg.Response) {
			code(t, "top level", resp.(*kmsg.AlterShareGroupOffsetsResponse).ErrorCode, groupAuth)
		}},
		{"DeleteShareGroupOffsets", func() kmsg.Request {
			r := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
			r.GroupID = group
			return r
		}, 0, func(t *testing.T, resp kmsg.Response) {
			code(t, "top level", resp.(*kmsg.DeleteShareGroupOffsetsResponse).ErrorCode, groupAuth)
		}},
	}
}
