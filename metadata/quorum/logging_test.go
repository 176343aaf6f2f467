package quorum

import (
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

func TestRaftLinesGoToZapAtTheirLevel(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	l := raftLogger(zap.New(core)).Named("net")
	l.Debug("hidden")
	l.Warn("heartbeat timeout reached", "last-leader-id", "2")
	l.Error("failed to contact", "server-id", 3)
	got := logs.AllUntimed()
	if len(got) != 2 {
		t.Fatalf("entries = %+v", got)
	}
	if e := got[0]; e.Level != zapcore.WarnLevel || e.Message != "heartbeat timeout reached" || e.ContextMap()["last-leader-id"] != "2" || e.ContextMap()["logger"] != "raft.net" {
		t.Fatalf("warning = %+v %v", e.Entry, e.ContextMap())
	}
	if e := got[1]; e.Level != zapcore.ErrorLevel || e.ContextMap()["server-id"] != int64(3) {
		t.Fatalf("error = %+v %v", e.Entry, e.ContextMap())
	}
}
