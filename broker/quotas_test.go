package broker

import (
	"testing"
	"time"

	"github.com/strata-io/strata/metadata"
)

func quotaImage(t *testing.T, key string, quotas map[metadata.QuotaEntity]float64) *metadata.Image {
	t.Helper()
	d := metadata.NewDelta(metadata.Empty)
	for e, v := range quotas {
		if err := d.Replay(metadata.ClientQuotaRecord{Entity: e.Parts(), Key: key, Value: v}); err != nil {
			t.Fatal(err)
		}
	}
	return d.Apply()
}

// TestQuotaRateAndThrottleTime checks the rate and throttle time against
// Kafka's Rate and QuotaUtils arithmetic: a new sensor's window counts as
// samples-1 whole windows, the throttle is (rate - bound) / bound *
// window, a value over the bound is still counted, and old windows age
// out.
func TestQuotaRateAndThrottleTime(t *testing.T) {
	m := newClientQuotaManager(QuotaConfig{}, quotaProducerByteRate)
	m.update(quotaImage(t, quotaProducerByteRate, map[metadata.QuotaEntity]float64{{ClientID: metadata.Named("c")}: 1000}))
	t0 := time.UnixMilli(1_000_000)
	at := func(ms int64) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	// 10 windows of 1 s: 10000 bytes is exactly the bound.
	if got := m.record("User:ANONYMOUS", "c", 10000, at(0)); got != 0 {
		t.Fatalf("at the bound: throttle %d, want 0", got)
	}
	// 15000 over 10 s is 1500/s: (1500-1000)/1000 * 10000 ms.
	if got := m.record("User:ANONYMOUS", "c", 5000, at(0)); got != 5000 {
		t.Fatalf("over the bound: throttle %d, want 5000", got)
	}
	// At 8 s the span is still counted as 10 s: 17500 over 10 s.
	if got := m.record("User:ANONYMOUS", "c", 2500, at(8000)); got != 7500 {
		t.Fatalf("8 s later: throttle %d, want (1750-1000)/1000*10000 = 7500", got)
	}
	// At 10.5 s the span is 10.5 s: 17501 over 10.5 s.
	if got := m.record("User:ANONYMOUS", "c", 1, at(10500)); got != 7001 {
		t.Fatalf("10.5 s later: throttle %d, want (1666.76-1000)/1000*10500 = 7001", got)
	}
	// Another client id has no quota.
	if got := m.record("User:ANONYMOUS", "other", 1e9, at(10500)); got != 0 {
		t.Fatalf("a client without a quota: throttle %d", got)
	}
	// 30 s later the old windows are gone.
	if got := m.record("User:ANONYMOUS", "c", 100, at(42500)); got != 0 {
		t.Fatalf("after the windows aged out: throttle %d", got)
	}
	if got, want := m.maxValueInWindow("User:ANONYMOUS", "c"), 10000.0; got != want {
		t.Fatalf("max value in window = %v, want %v", got, want)
	}
}

// TestQuotaPrecedence checks the quota a client gets, and which clients
// share a sensor, follow Kafka's order: user+client-id, user+default
// client-id, user, default user+client-id, default user+default
// client-id, default user, client-id, default client-id.
func TestQuotaPrecedence(t *testing.T) {
	n, def := metadata.Named, metadata.DefaultName()
	all := map[metadata.QuotaEntity]float64{
		{User: n("alice"), ClientID: n("a1")}: 1,
		{User: n("alice"), ClientID: def}:     2,
		{User: n("bob")}:                      3,
		{User: def, ClientID: n("c1")}:        4,
		{User: def, ClientID: def}:            5,
		{User: def}:                           6,
		{ClientID: n("c2")}:                   7,
		{ClientID: def}:                       8,
	}
	table := func(drop ...metadata.QuotaEntity) *quotaTable {
		q := map[metadata.QuotaEntity]float64{}
		for e, v := range all {
			q[e] = v
		}
		for _, e := range drop {
			delete(q, e)
		}
		return newQuotaTable(quotaImage(t, quotaProducerByteRate, q), quotaProducerByteRate)
	}
	for _, tc := range []struct {
		user, client string
		drop         []metadata.QuotaEntity
		want         float64
		tags         quotaTags
	}{
		{"alice", "a1", nil, 1, quotaTags{"alice", "a1"}},
		{"alice", "x", nil, 2, quotaTags{"alice", "x"}},
		{"bob", "x", nil, 3, quotaTags{"bob", ""}},
		{"carol", "c1", nil, 4, quotaTags{"carol", "c1"}},
		{"carol", "x", nil, 5, quotaTags{"carol", "x"}},
		{"carol", "x", []metadata.QuotaEntity{{User: def, ClientID: def}}, 6, quotaTags{"carol", ""}},
		{"carol", "c2", []metadata.QuotaEntity{{User: def, ClientID: def}, {User: def}}, 7, quotaTags{"", "c2"}},
		{"carol", "x", []metadata.QuotaEntity{{User: def, ClientID: def}, {User: def}}, 8, quotaTags{"", "x"}},
		{"alice", "x", []metadata.QuotaEntity{{User: n("alice"), ClientID: def}, {User: def, ClientID: def}, {User: def}}, 8, quotaTags{"", "x"}},
	} {
		tb := table(tc.drop...)
		tags := tb.tags(tc.user, tc.client)
		got, ok := tb.limit(tags)
		if tags != tc.tags || !ok || got != tc.want {
			t.Errorf("%s/%s without %v: tags %+v, quota %v %v; want %+v, %v", tc.user, tc.client, tc.drop, tags, got, ok, tc.tags, tc.want)
		}
	}
	only := newQuotaTable(quotaImage(t, quotaProducerByteRate, map[metadata.QuotaEntity]float64{{User: n("alice")}: 9}), quotaProducerByteRate)
	if tags := only.tags("alice", "x"); tags != (quotaTags{"alice", ""}) {
		t.Errorf("user quotas only: tags %+v, want the user's alone", tags)
	}
	if _, ok := only.limit(only.tags("bob", "x")); ok {
		t.Error("bob has alice's quota")
	}
}

// TestRequestQuotaThrottleIsAtMostOneWindow checks the request quota's
// throttle time is bounded by one window, as Kafka's
// ClientRequestQuotaManager, and the byte quotas' is not.
func TestRequestQuotaThrottleIsAtMostOneWindow(t *testing.T) {
	q := newClientQuotas(QuotaConfig{})
	img := metadata.NewDelta(metadata.Empty)
	for _, key := range []string{quotaRequestPercentage, quotaProducerByteRate} {
		if err := img.Replay(metadata.ClientQuotaRecord{Entity: metadata.QuotaEntity{ClientID: metadata.DefaultName()}.Parts(), Key: key, Value: 1}); err != nil {
			t.Fatal(err)
		}
	}
	q.update(img.Apply())
	now := time.UnixMilli(5_000_000)
	if got := q.request.record("User:ANONYMOUS", "c", 1000, now); got != 1000 {
		t.Errorf("request quota throttle %d ms, want the 1000 ms window", got)
	}
	if got := q.produce.record("User:ANONYMOUS", "c", 1000, now); got != 990000 {
		t.Errorf("produce quota throttle %d ms, want (100 - 1) / 1 * 10000", got)
	}
}
