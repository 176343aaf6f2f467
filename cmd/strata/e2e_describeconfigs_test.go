package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/describeconfigs.golden")

// TestDescribeConfigsGolden checks every field of DescribeConfigs v4 (values,
// sources, synonyms, types, read-only flags, documentation) for a topic, this
// node and the cluster default, against testdata/describeconfigs.golden.
// The broker has server.properties keys, dynamic broker configs at both
// levels and topic overrides, so every source appears. go test -run
// TestDescribeConfigsGolden -update rewrites the file after a deliberate change.
func TestDescribeConfigsGolden(t *testing.T) {
	e2e(t)
	dir := t.TempDir()
	p := startBroker(t, dir, "--override", "log.retention.hours=24", "--override", "log.segment.bytes=50000000",
		"--override", "log.roll.hours=2", "--override", "log.cleanup.policy=compact,delete",
		"--override", "num.partitions=2", "--override", "socket.request.max.bytes=50000000")
	cl := newClient(t, p.addr)
	adm := kadm.NewClient(cl)
	ctx := timeoutCtx(t, 30*time.Second)
	ptr := func(s string) *string { return &s }
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"retention.ms": ptr("1000"), "segment.jitter.ms": ptr("5")}, "t1"); err != nil {
		t.Fatal(err)
	}
	alter := func(what string, resps kadm.AlterConfigsResponses, err error) {
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		for _, r := range resps {
			if r.Err != nil {
				t.Fatalf("%s %q: %v (%s)", what, r.Name, r.Err, r.ErrMessage)
			}
		}
	}
	resps, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "log.segment.bytes", Value: ptr("40000000")}, {Name: "sasl.kerberos.min.time.before.relogin", Value: ptr("70000")}}, 1)
	alter("node configs", resps, err)
	resps, err = adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "log.retention.ms", Value: ptr("7200000")}, {Name: "log.flush.interval.ms", Value: ptr("100")}})
	alter("cluster default configs", resps, err)

	req := kmsg.NewPtrDescribeConfigsRequest()
	req.SetVersion(4)
	req.IncludeSynonyms, req.IncludeDocumentation = true, true
	for _, r := range []struct {
		typ  kmsg.ConfigResourceType
		name string
	}{{kmsg.ConfigResourceTypeTopic, "t1"}, {kmsg.ConfigResourceTypeBroker, "1"}, {kmsg.ConfigResourceTypeBroker, ""}} {
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = r.typ, r.name
		req.Resources = append(req.Resources, rr)
	}
	resp, err := cl.Broker(1).Request(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, res := range resp.(*kmsg.DescribeConfigsResponse).Resources {
		if err := kerr.ErrorForCode(res.ErrorCode); err != nil {
			t.Fatalf("%s %q: %v", res.ResourceType, res.ResourceName, err)
		}
		fmt.Fprintf(&b, "%s %q\n", res.ResourceType, res.ResourceName)
		for _, c := range res.Configs {
			fmt.Fprintf(&b, "  %s = %s source=%s default=%v read-only=%v sensitive=%v type=%s\n    doc: %s\n",
				c.Name, quoted(c.Value), c.Source, c.IsDefault, c.ReadOnly, c.IsSensitive, c.ConfigType, quoted(c.Documentation))
			for _, s := range c.ConfigSynonyms {
				fmt.Fprintf(&b, "    synonym %s = %s source=%s\n", s.Name, quoted(s.Value), s.Source)
			}
		}
	}
	got := strings.NewReplacer(p.addr, "ADDR", dir, "DIR").Replace(b.String())
	golden := filepath.Join("testdata", "describeconfigs.golden")
	if *updateGolden {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("DescribeConfigs differs from %s (rerun with -update after a deliberate change):\n%s", golden, lineDiff(string(want), got))
	}
}

func quoted(s *string) string {
	if s == nil {
		return "null"
	}
	return fmt.Sprintf("%q", *s)
}

// lineDiff lists the lines only in want (-) and only in got (+).
func lineDiff(want, got string) string {
	count := map[string]int{}
	for _, l := range strings.Split(want, "\n") {
		count[l]++
	}
	for _, l := range strings.Split(got, "\n") {
		count[l]--
	}
	var out strings.Builder
	for _, l := range strings.Split(want, "\n") {
		if count[l] > 0 {
			fmt.Fprintf(&out, "- %s\n", l)
		}
	}
	for _, l := range strings.Split(got, "\n") {
		if count[l] < 0 {
			fmt.Fprintf(&out, "+ %s\n", l)
		}
	}
	return out.String()
}
