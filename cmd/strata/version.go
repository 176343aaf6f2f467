package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/strata-io/strata/metrics"
)

// version and commit are set by make build with -ldflags "-X main.version=...
// -X main.commit=..." (git describe --tags --always --dirty, git rev-parse HEAD).
// The commit recorded by the Go toolchain (vcs.revision) wins over commit: it is
// exact, and make build passes the flag only because a git worktree, unlike a
// clone, gets no vcs stamp.
var version, commit string

// buildInfo says which Strata this is.
type buildInfo struct {
	Version   string // -X main.version, else the module version go install stamps, else "dev"
	Commit    string // vcs.revision, else -X main.commit, else "unknown"
	Modified  bool   // vcs.modified: built from a tree with uncommitted changes
	Time      string // vcs.time: the commit's time, RFC 3339; empty when unknown
	GoVersion string
}

func readBuildInfo() buildInfo {
	b := buildInfo{Version: version, Commit: commit, GoVersion: runtime.Version()}
	if info, ok := debug.ReadBuildInfo(); ok {
		b.GoVersion = info.GoVersion
		if b.Version == "" && info.Main.Version != "" && info.Main.Version != "(devel)" {
			b.Version = info.Main.Version
		}
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				b.Commit = s.Value
			case "vcs.modified":
				b.Modified = s.Value == "true"
			case "vcs.time":
				b.Time = s.Value
			}
		}
	}
	if b.Version == "" {
		b.Version = "dev"
	}
	if b.Commit == "" {
		b.Commit = "unknown"
	}
	return b
}

// commitLabel is the commit with -dirty appended for a modified tree, as git
// describe --dirty marks it.
func (b buildInfo) commitLabel() string {
	if b.Modified {
		return b.Commit + "-dirty"
	}
	return b.Commit
}

// String is what --version prints: strata VERSION (commit C[-dirty][, TIME], GO OS/ARCH).
func (b buildInfo) String() string {
	when := ""
	if b.Time != "" {
		when = ", " + b.Time
	}
	return fmt.Sprintf("strata %s (commit %s%s, %s %s/%s)", b.Version, b.commitLabel(), when, b.GoVersion, runtime.GOOS, runtime.GOARCH)
}

// metrics is the strata_build_info gauge's labels.
func (b buildInfo) metrics() metrics.BuildInfo {
	return metrics.BuildInfo{Version: b.Version, Commit: b.commitLabel(), GoVersion: b.GoVersion}
}
