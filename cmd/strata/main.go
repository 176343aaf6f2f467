// Command strata runs a single-node, Kafka wire-compatible broker.
//
//	strata [--config server.properties] [--override key=value]... [--log-requests] [--log-level info]
//	strata --version
//
// With no arguments it serves PLAINTEXT on 127.0.0.1:9092 with its data under ./data.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/strata-io/strata/broker"
	"github.com/strata-io/strata/coordinator"
	"github.com/strata-io/strata/storage"
)

// shutdownTimeout bounds how long in-flight requests may take to finish on SIGTERM
// before their connections are cut; the logs are closed cleanly either way.
const shutdownTimeout = 30 * time.Second

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// options are the command-line flags.
type options struct {
	configFile  string
	overrides   []string
	logRequests bool
	logLevel    zapcore.Level
	pprofAddr   string
	version     bool
}

const usageHeader = `Usage: strata [--config FILE | FILE] [--override key=value]... [flags]
       strata --version | strata version

strata runs a broker that speaks Kafka's wire protocol: one node, or with several
controller.quorum.voters a node of a cluster. Without a
configuration it serves PLAINTEXT on 127.0.0.1:9092 with its data in ./data.

Configuration takes Kafka's server.properties keys (the README's Configuration
section lists those Strata implements; Kafka's own config/server.properties works):
  --config FILE         a properties file, as kafka-server-start takes it
  FILE                  the same file as the only positional argument
  --override key=value  a key set after the file; repeatable

Flags:
`

type overrideFlag struct{ list *[]string }

func (o overrideFlag) String() string {
	if o.list == nil {
		return ""
	}
	return strings.Join(*o.list, " ")
}

func (o overrideFlag) Set(v string) error {
	if _, _, err := parseOverride(v); err != nil {
		return err
	}
	*o.list = append(*o.list, v)
	return nil
}

// parseFlags accepts the flags anywhere, and like kafka-server-start one positional
// argument naming the properties file; "version" alone is the version command. It
// prints nothing: the caller reports an error once, and on flag.ErrHelp writes
// usage.
func parseFlags(args []string, usage io.Writer) (options, error) {
	opts := options{logLevel: zapcore.InfoLevel}
	if len(args) == 1 && args[0] == "version" {
		opts.version = true
		return opts, nil
	}
	fs := flag.NewFlagSet("strata", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {} // the flag package calls it on errors too
	fs.BoolVar(&opts.version, "version", false, "print the version, commit and Go version, and exit")
	fs.StringVar(&opts.configFile, "config", "", "server.properties `file` (Java properties format)")
	fs.Var(overrideFlag{&opts.overrides}, "override", "`key=value` applied after the config file; repeatable")
	fs.BoolVar(&opts.logRequests, "log-requests", false, "log every decoded request and response")
	fs.TextVar(&opts.logLevel, "log-level", zapcore.InfoLevel, "log `level`: debug, info, warn or error")
	fs.StringVar(&opts.pprofAddr, "pprof", "", "serve net/http/pprof on `host:port` (profiling; off by default)")
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fmt.Fprint(usage, usageHeader)
				fs.SetOutput(usage)
				fs.PrintDefaults()
			}
			return opts, err
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		positional = append(positional, args[0])
		args = args[1:]
	}
	switch {
	case len(positional) > 1:
		return opts, fmt.Errorf("unexpected arguments %q; use --config FILE and --override key=value", positional[1:])
	case len(positional) == 1 && opts.configFile != "":
		return opts, fmt.Errorf("config file given twice: %q and --config %q", positional[0], opts.configFile)
	case len(positional) == 1:
		opts.configFile = positional[0]
	}
	return opts, nil
}

// newLogger writes human-readable lines to w.
func newLogger(w io.Writer, level zapcore.Level) *zap.Logger {
	enc := zap.NewDevelopmentEncoderConfig()
	enc.EncodeTime = zapcore.ISO8601TimeEncoder
	core := zapcore.NewCore(zapcore.NewConsoleEncoder(enc), zapcore.Lock(zapcore.AddSync(w)), level)
	return zap.New(core, zap.AddStacktrace(zapcore.DPanicLevel))
}

// loadConfig reads the file (if any), applies the overrides and validates the result.
func loadConfig(opts options, log *zap.Logger) (settings, error) {
	props := map[string]string{}
	if opts.configFile != "" {
		data, err := os.ReadFile(opts.configFile)
		if err != nil {
			return settings{}, fmt.Errorf("read config: %w", err)
		}
		if props, err = parseProperties(string(data)); err != nil {
			return settings{}, fmt.Errorf("config file %s: %w", opts.configFile, err)
		}
	}
	for _, o := range opts.overrides {
		k, v, err := parseOverride(o)
		if err != nil {
			return settings{}, err
		}
		props[k] = v
	}
	return loadSettings(props, log)
}

// brokerConfig maps the settings onto the broker's configuration.
func brokerConfig(s settings, logRequests bool, build buildInfo) broker.Config {
	cfg := broker.Config{
		Build:                 build.metrics(),
		Listeners:             s.Listeners,
		AdvertisedListeners:   s.AdvertisedListeners,
		ListenerTLS:           s.ListenerTLS,
		ListenerSASL:          s.ListenerSASL,
		LogDirs:               s.LogDir,
		NodeID:                s.NodeID,
		NumPartitions:         s.NumPartitions,
		AutoCreateTopics:      s.AutoCreateTopics,
		NoTxnVerification:     !s.TxnVerification,
		UnstableAPIVersions:   s.UnstableAPIVersions,
		SocketRequestMaxBytes: s.SocketRequestMaxBytes,
		LogRequests:           logRequests,
		MetricsListener:       s.MetricsListener,
		Limits:                s.Limits.config(),
		Quotas:                s.Limits.quotas(),
		StaticConfigs:         s.Static,
		StandardAuthorizer:    s.Authorizer,

		FetchSessionCacheSlots: fetchSessionSlots(s.FetchSessionSlots),
		TelemetryMaxBytes:      s.TelemetryMaxBytes,
		Groups: coordinator.GroupConfig{
			OffsetsTopicPartitions: s.OffsetsTopicPartitions,
			OffsetsRetention:       time.Duration(s.OffsetsRetentionMinutes) * time.Minute,
			RetentionCheckInterval: time.Duration(s.OffsetsRetentionCheckMs) * time.Millisecond,
			MinSessionTimeout:      time.Duration(s.GroupMinSessionTimeoutMs) * time.Millisecond,
			MaxSessionTimeout:      time.Duration(s.GroupMaxSessionTimeoutMs) * time.Millisecond,
			InitialRebalanceDelay:  time.Duration(s.GroupInitialRebalanceDelayMs) * time.Millisecond,
			MaxSize:                s.GroupMaxSize,
			OffsetsSegmentBytes:    s.OffsetsSegmentBytes,

			ConsumerSessionTimeout:    time.Duration(s.ConsumerSessionTimeoutMs) * time.Millisecond,
			ConsumerHeartbeatInterval: time.Duration(s.ConsumerHeartbeatIntervalMs) * time.Millisecond,
			ConsumerMaxSize:           s.ConsumerMaxSize,
			ConsumerMigrationPolicy:   s.ConsumerMigrationPolicy,
		},
		Txns:             s.Txn.config(),
		DelegationTokens: s.Tokens.config(),
		Log: storage.Config{
			SegmentBytes:          s.SegmentBytes,
			SegmentMs:             s.SegmentMs,
			IndexIntervalBytes:    s.IndexIntervalBytes,
			MaxIndexSize:          s.MaxIndexSize,
			MaxMessageBytes:       s.MaxMessageBytes,
			FlushIntervalMessages: s.FlushIntervalMessages,
			MinInSyncReplicas:     s.MinInSyncReplicas,
			FlushIntervalMs:       s.FlushIntervalMs,

			CheckTimestamps:      s.TimestampType == "CreateTime",
			TimestampBeforeMaxMs: s.TimestampBeforeMaxMs,
			TimestampAfterMaxMs:  s.TimestampAfterMaxMs,

			Compact:                s.CleanupCompact,
			DeleteRetentionMs:      s.DeleteRetentionMs,
			MinCompactionLagMs:     s.MinCompactionLagMs,
			MinCleanableDirtyRatio: s.MinCleanableRatio,
			CleanerDisable:         !s.CleanerEnable,
			CleanerBackoffMs:       s.CleanerBackoffMs,
		},
	}
	s.Retention.apply(&cfg.Log)
	return cfg
}

// run is main without the exit: 0 after a clean shutdown, --help or --version; 1 on
// bad usage (as kafka-server-start), a configuration or a runtime error.
func run(args []string, stdout, stderr io.Writer) int {
	start := time.Now()
	opts, err := parseFlags(args, stdout)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "strata: %v\nRun 'strata --help' for usage.\n", err)
		return 1
	}
	build := readBuildInfo()
	if opts.version {
		fmt.Fprintln(stdout, build)
		return 0
	}
	log := newLogger(stderr, opts.logLevel)
	defer log.Sync() //nolint:errcheck // nothing useful to do if stderr fails

	s, err := loadConfig(opts, log)
	if err != nil {
		log.Error("invalid configuration", zap.Error(err))
		return 1
	}
	if opts.pprofAddr != "" {
		if err := servePprof(opts.pprofAddr, log); err != nil {
			log.Error("cannot serve pprof", zap.Error(err))
			return 1
		}
	}
	cfg := brokerConfig(s, opts.logRequests, build)
	if s.clustered() {
		stopQuorum, err := startQuorum(s, &cfg, log)
		if err != nil {
			log.Error("cannot start", zap.Error(err))
			return 1
		}
		defer func() {
			if err := stopQuorum(); err != nil {
				log.Error("closing the metadata quorum", zap.Error(err))
			}
		}()
	}
	b, err := broker.New(cfg, log)
	if err != nil {
		log.Error("cannot start", zap.Error(err))
		return 1
	}
	log.Info("listening",
		zap.Stringer("addr", b.Addr()),
		zap.String("listeners", s.Listeners),
		zap.String("advertised.listeners", s.AdvertisedListeners),
		zap.String("log.dir", s.LogDir),
		zap.Int32("node.id", s.NodeID),
		zap.String("version", build.Version),
		zap.String("commit", build.commitLabel()),
		zap.String("go", build.GoVersion),
		zap.Duration("startup", time.Since(start)))
	if a := b.MetricsAddr(); a != nil {
		log.Info("serving metrics", zap.String("metrics", "http://"+a.String()+"/metrics"), zap.String("healthz", "http://"+a.String()+"/healthz"))
	}

	signals := make(chan os.Signal, 2)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	served := make(chan error, 1)
	go func() { served <- b.Serve() }()

	select {
	case err := <-served:
		// Serve only returns on its own when accepting fails for good.
		log.Error("serving failed", zap.Error(err))
		ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer cancel()
		if err := b.Shutdown(ctx); err != nil {
			log.Error("shutdown", zap.Error(err))
		}
		return 1
	case sig := <-signals:
		log.Info("shutting down", zap.Stringer("signal", sig), zap.Duration("deadline", shutdownTimeout))
	}

	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	shut := make(chan error, 1)
	go func() { shut <- b.Shutdown(ctx) }()
	select {
	case err := <-shut:
		if err != nil {
			log.Error("shutdown failed", zap.Error(err))
			return 1
		}
	case sig := <-signals:
		log.Warn("second signal, exiting without a clean shutdown", zap.Stringer("signal", sig))
		return 1
	}
	if err := <-served; err != nil {
		log.Error("serving failed", zap.Error(err))
		return 1
	}
	log.Info("stopped cleanly", zap.Duration("uptime", time.Since(start)))
	return 0
}
