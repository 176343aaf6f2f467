package metrics

import "github.com/prometheus/client_golang/prometheus"

// BuildInfo labels the strata_build_info gauge, whose value is always 1, so
// a dashboard can tell which build each broker runs.
type BuildInfo struct {
	Version   string // the release (git describe), or "dev"
	Commit    string // the git commit, -dirty for a modified tree
	GoVersion string // the Go toolchain that built the binary
}

var buildInfoDesc = prometheus.NewDesc(BuildInfoMetric,
	"Always 1; the labels say which build of Strata this is.", []string{"version", "commit", "goversion"}, nil)

// SetBuildInfo makes scrapes report b as strata_build_info.
func (m *Metrics) SetBuildInfo(b BuildInfo) {
	if m != nil {
		m.build.Store(&b)
	}
}

// buildCollector emits strata_build_info once SetBuildInfo was called.
type buildCollector struct{ m *Metrics }

func (c *buildCollector) Describe(ch chan<- *prometheus.Desc) { ch <- buildInfoDesc }

func (c *buildCollector) Collect(ch chan<- prometheus.Metric) {
	if b := c.m.build.Load(); b != nil {
		ch <- prometheus.MustNewConstMetric(buildInfoDesc, prometheus.GaugeValue, 1, b.Version, b.Commit, b.GoVersion)
	}
}
