package metrics

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.uber.org/zap"
)

func TestBuildInfoGauge(t *testing.T) {
	m := New()
	srv := httptest.NewServer(m.Handler(zap.NewNop()))
	defer srv.Close()
	scrape := func() string {
		t.Helper()
		resp, err := http.Get(srv.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return string(body)
	}
	if body := scrape(); strings.Contains(body, BuildInfoMetric+"{") {
		t.Errorf("%s reported before SetBuildInfo:\n%s", BuildInfoMetric, body)
	}
	m.SetBuildInfo(BuildInfo{Version: "v1.2.3", Commit: "abc-dirty", GoVersion: "go1.99"})
	want := `strata_build_info{commit="abc-dirty",goversion="go1.99",version="v1.2.3"} 1`
	if body := scrape(); !strings.Contains(body, want) {
		t.Errorf("/metrics lacks %s:\n%s", want, body)
	}
	var nilMetrics *Metrics
	nilMetrics.SetBuildInfo(BuildInfo{})
}
