package metrics

import (
	"testing"
	"time"
)

func TestFsyncHistogram(t *testing.T) {
	var nilM *Metrics
	nilM.Fsync(time.Millisecond) // no-op when metrics are off
	m := New()
	m.Fsync(2 * time.Millisecond)
	m.Fsync(3 * time.Millisecond)
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == FsyncDurationSeconds {
			h := mf.GetMetric()[0].GetHistogram()
			if h.GetSampleCount() != 2 || h.GetSampleSum() < 0.0049 || h.GetSampleSum() > 0.0051 {
				t.Fatalf("fsync histogram count %d sum %g", h.GetSampleCount(), h.GetSampleSum())
			}
			return
		}
	}
	t.Fatalf("%s not exported", FsyncDurationSeconds)
}
