package metrics

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
)

func TestParseListener(t *testing.T) {
	for _, c := range []struct{ in, want, err string }{
		{"http://127.0.0.1:9644", "127.0.0.1:9644", ""},
		{"HTTP://127.0.0.1:9644/", "127.0.0.1:9644", ""},
		{" 0.0.0.0:0 ", "0.0.0.0:0", ""},
		{"http://:9644", ":9644", ""},
		{"http://[::1]:9644", "[::1]:9644", ""},
		{"https://127.0.0.1:9644", "", "only http://"},
		{"http://127.0.0.1", "", "want http://host:port"},
		{"http://127.0.0.1:x", "", "port must be"},
		{"http://127.0.0.1:65536", "", "port must be"},
		{"http://127.0.0.1:9644/metrics", "", "without a path"},
	} {
		got, err := ParseListener(c.in)
		switch {
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("ParseListener(%q) = %q, %v; want %q", c.in, got, err, c.want)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("ParseListener(%q) error %v, want one containing %q", c.in, err, c.err)
		}
	}
}

func TestNilMetricsDoNothing(t *testing.T) {
	var m *Metrics
	m.ConnOpened()
	m.ConnClosed()
	m.Request(0, 9, 0, time.Millisecond)
	m.PartitionError(1, 3)
	m.SetReady(true)
	m.SetStorage(nil)
	m.SetGroupOffsets(nil)
	m.Topic("t").Produced(1, 1)
	m.Topic("t").Fetched(1)
	if m.Ready() || m.Registry() != nil {
		t.Fatal("nil metrics claim to be ready or have a registry")
	}
}

func TestHealthzFollowsReady(t *testing.T) {
	m := New()
	srv := httptest.NewServer(m.Handler(zap.NewNop()))
	defer srv.Close()
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, _ := get("/healthz"); code != http.StatusServiceUnavailable {
		t.Errorf("/healthz before ready: %d, want 503", code)
	}
	m.SetReady(true)
	if code, body := get("/healthz"); code != http.StatusOK || body != "ok\n" {
		t.Errorf("/healthz when ready: %d %q", code, body)
	}
	m.SetReady(false)
	if code, _ := get("/healthz"); code != http.StatusServiceUnavailable {
		t.Errorf("/healthz after shutdown began: %d, want 503", code)
	}
	m.Request(0, 9, 0, 3*time.Millisecond)
	m.PartitionError(0, 3)
	m.PartitionError(0, 0)
	_, body := get("/metrics")
	for _, want := range []string{
		`strata_requests_total{api="Produce",error="NONE",version="9"} 1`,
		`strata_partition_errors_total{api="Produce",error="UNKNOWN_TOPIC_OR_PARTITION"} 1`,
		`strata_request_duration_seconds_bucket{api="Produce",le="0.005"} 1`,
		`strata_connections_open 0`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if code, _ := get("/other"); code != http.StatusNotFound {
		t.Errorf("/other: %d, want 404", code)
	}
}

func TestErrorName(t *testing.T) {
	for code, want := range map[int16]string{
		0: "NONE", 3: "UNKNOWN_TOPIC_OR_PARTITION", -1: "UNKNOWN_SERVER_ERROR",
		Disconnected: "DISCONNECTED", 30000: "30000",
	} {
		if got := ErrorName(code); got != want {
			t.Errorf("ErrorName(%d) = %q, want %q", code, got, want)
		}
	}
}
