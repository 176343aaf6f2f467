package quorum

import (
	"fmt"
	"io"

	"github.com/hashicorp/go-hclog"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// raftLogger is an hclog.Logger (raft's) whose every line goes to logger
// at its level, with raft's key-value pairs as fields.
func raftLogger(logger *zap.Logger) hclog.Logger {
	l := hclog.NewInterceptLogger(&hclog.LoggerOptions{Name: "raft", Output: io.Discard, Level: hclog.Off})
	l.RegisterSink(zapSink{logger})
	return l
}

type zapSink struct{ logger *zap.Logger }

func (s zapSink) Accept(name string, level hclog.Level, msg string, args ...any) {
	lvl := zapcore.DebugLevel
	switch {
	case level >= hclog.Error:
		lvl = zapcore.ErrorLevel
	case level == hclog.Warn:
		lvl = zapcore.WarnLevel
	case level == hclog.Info:
		lvl = zapcore.InfoLevel
	}
	ce := s.logger.Check(lvl, msg)
	if ce == nil {
		return
	}
	fields := make([]zap.Field, 0, 1+len(args)/2)
	fields = append(fields, zap.String("logger", name))
	for i := 0; i+1 < len(args); i += 2 {
		fields = append(fields, zap.Any(fmt.Sprint(args[i]), args[i+1]))
	}
	ce.Write(fields...)
}
