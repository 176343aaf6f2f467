package broker

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/protocol"
)

// askVersions sends ApiVersions on nc and reports whether it was
// answered before the broker closed the connection.
func askVersions(t *testing.T, nc net.Conn) bool {
	t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("c")).AppendRequest(nil, req, 1)
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := nc.Write(frame); err != nil {
		return false
	}
	_, err := protocol.ReadFrame(nc, 1<<20, nil)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("neither answered nor closed: %v", err)
		}
	}
	return err == nil
}

// TestConnectionCreationRatePerIP checks a client address over its
// connection_creation_rate (here the default IP entity's) gets its new
// connection closed unserved after the throttle time, at most a window,
// as Kafka's ConnectionQuotas; the refused attempt is not counted.
func TestConnectionCreationRatePerIP(t *testing.T) {
	b := startBroker(t, nil)
	s := kmsg.StringPtr
	// 1 a second over 10 windows: ten at once are at the bound.
	if e := alterQuotas(t, b, false, [][]kmsg.AlterClientQuotasRequestEntryEntity{quotaEntity(s("ip"), nil)},
		quotaOp{key: "connection_creation_rate", value: 1}); e[0].ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(e[0].ErrorCode))
	}
	// alterQuotas' own connection came before the quota.
	for i := range 10 {
		if !askVersions(t, dialQuota(t, b)) {
			t.Fatalf("connection %d refused, within the rate", i+1)
		}
	}
	start := time.Now()
	if askVersions(t, dialQuota(t, b)) {
		t.Fatal("the eleventh connection in a second was served")
	}
	if took := time.Since(start); took < 500*time.Millisecond || took > 3*time.Second {
		t.Errorf("the throttled connection was closed after %v, want about the 1 s throttle", took)
	}
	r := b.quotas.conns
	r.mu.Lock()
	defer r.mu.Unlock()
	if got := len(r.perIP.byKey); got != 1 {
		t.Fatalf("%d addresses counted, want 1", got)
	}
	var n float64
	for _, sm := range r.perIP.byKey["127.0.0.1"].rate.samples {
		n += sm.value
	}
	if n != 10 {
		t.Errorf("the address's count is %v, want 10: the refused attempt is taken back", n)
	}
}

// TestMaxConnectionCreationRate checks that over
// max.connection.creation.rate the broker serves a new connection only
// after the throttle time, as Kafka's acceptor waits.
func TestMaxConnectionCreationRate(t *testing.T) {
	b := startBroker(t, func(c *Config) { c.Quotas.MaxConnectionCreationRate = 1 })
	for i := range 10 {
		if !askVersions(t, dialQuota(t, b)) {
			t.Fatalf("connection %d refused", i+1)
		}
	}
	start := time.Now()
	if !askVersions(t, dialQuota(t, b)) {
		t.Fatal("the eleventh connection was refused, want it served late")
	}
	if took := time.Since(start); took < 500*time.Millisecond {
		t.Errorf("the eleventh connection in a second was served after %v, want after the 1 s throttle", took)
	}
}
