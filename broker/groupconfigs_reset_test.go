package broker

import (
	"testing"
	"time"
)

// TestShareResetDuration reads by_duration values as Java's Duration.parse:
// days, hours, minutes and fractional seconds, in any case.
func TestShareResetDuration(t *testing.T) {
	for v, want := range map[string]time.Duration{
		"by_duration:PT1H":           time.Hour,
		"BY_DURATION:p1dt2h3m4.5s":   26*time.Hour + 3*time.Minute + 4500*time.Millisecond,
		"by_duration:P2D":            48 * time.Hour,
		"by_duration:PT0,000000001S": time.Nanosecond,
		" by_duration:PT90M ":        90 * time.Minute,
		"by_duration:PT1.123456789S": time.Second + 123456789*time.Nanosecond,
	} {
		if got, ok := shareResetDuration(v); !ok || got != want {
			t.Errorf("%q: %v %v, want %v", v, got, ok, want)
		}
	}
	for _, v := range []string{"earliest", "by_duration:", "by_duration:P", "by_duration:PT", "by_duration:-PT1H", "by_duration:1H", "by_duration:PT1H2D"} {
		if d, ok := shareResetDuration(v); ok {
			t.Errorf("%q read as %v", v, d)
		}
	}
}
