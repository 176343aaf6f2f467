package main

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestMetricsListener(t *testing.T) {
	e2e(t)
	b := startBroker(t, "", "--override", "metrics.listener=http://127.0.0.1:0")
	line := b.waitLog(regexp.MustCompile(`\tserving metrics\t`), 10*time.Second)
	m := regexp.MustCompile(`"healthz": "(http://[^"]+)"`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("metrics line %q lacks the /healthz URL", line)
	}
	get := func(url string) (int, string) { return httpGet(t, url) }
	// Ready is set as Serve starts, just after the line is logged.
	waitFor(t, "/healthz 200", 10*time.Second, func() bool { code, _ := get(m[1]); return code == http.StatusOK })
	cl := newClient(t, b.addr)
	createTopic(t, cl, "scraped", 1)
	produceAll(t, cl, "scraped", 0, 10)
	code, body := get(strings.TrimSuffix(m[1], "/healthz") + "/metrics")
	if code != http.StatusOK || !strings.Contains(body, `strata_topic_records_in_total{topic="scraped"} 10`) {
		t.Fatalf("/metrics %d lacks 10 records in for topic scraped:\n%s", code, body)
	}

	// The build, as --version prints it, in the gauge and the start-up line.
	v := versionLine.FindStringSubmatch(runVersion(t, strataBin, "--version"))
	if v == nil {
		t.Fatal("--version output not understood")
	}
	version, commit, goVersion := v[1], v[2], v[4]
	gauge := `strata_build_info{commit="` + commit + `",goversion="` + goVersion + `",version="` + version + `"} 1`
	if !strings.Contains(body, gauge) {
		t.Errorf("/metrics lacks %s:\n%s", gauge, body)
	}
	b.waitLog(regexp.MustCompile(`\tlistening\t.*"version": "`+regexp.QuoteMeta(version)+`", "commit": "`+
		regexp.QuoteMeta(commit)+`", "go": "`+regexp.QuoteMeta(goVersion)+`"`), time.Second)
}
