// Command strata-proxy sits between Kafka clients and a Kafka broker and
// logs every request and response, decoded, one zap line each:
//
//	strata-proxy --upstream 127.0.0.1:9092 [--listen 127.0.0.1:19092] [--advertise host:port] [--log-level info]
//
// Point a client at --listen. Each client connection gets its own upstream
// connection; frames are forwarded as they are, so the broker sees exactly
// what the client sent. Requests are decoded with protocol.ParseRequest for
// what Strata serves, else with kmsg by key and version; responses with
// kmsg.ResponseForKey at the request's version, after the v0 or v1
// response header (protocol.FlexibleResponseHeader). A frame that does not
// decode is still forwarded, and logged as a warning with the error.
//
// Metadata and FindCoordinator responses are rewritten: every broker and
// coordinator host:port becomes the proxy's own address (--advertise,
// default the bound --listen address), so clients keep talking through the
// proxy instead of connecting to the broker directly. Since every broker
// maps to the one proxy and the proxy forwards to --upstream only, use it
// in front of a single broker (Strata, or the single-node Kafka of
// docker-compose.yml); against a multi-broker cluster requests for
// partitions led elsewhere would fail with NOT_LEADER errors.
//
// With --log-requests on the Strata broker this is the debugging pair: the
// proxy shows what went over the wire, the broker what it understood.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("strata-proxy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:19092", "`host:port` clients connect to")
	upstream := fs.String("upstream", "", "`host:port` of the Kafka broker to forward to (required)")
	advertise := fs.String("advertise", "", "`host:port` written into Metadata and FindCoordinator responses (default: the bound --listen address)")
	maxFrame := fs.Int("max-request-bytes", 100<<20, "largest request frame accepted from a client, in `bytes`")
	level := zapcore.InfoLevel
	fs.TextVar(&level, "log-level", zapcore.InfoLevel, "log `level`: debug, info, warn or error")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *upstream == "" || fs.NArg() > 0 || *maxFrame < 1 || *maxFrame > 1<<31-1 {
		fmt.Fprintln(stderr, "strata-proxy: --upstream host:port is required, --max-request-bytes must be positive, and no arguments are taken")
		fs.Usage()
		return 2
	}
	enc := zap.NewDevelopmentEncoderConfig()
	enc.EncodeTime = zapcore.ISO8601TimeEncoder
	log := zap.New(zapcore.NewCore(zapcore.NewConsoleEncoder(enc), zapcore.Lock(zapcore.AddSync(stderr)), level))
	defer log.Sync() //nolint:errcheck // nothing useful to do if stderr fails

	p, err := newProxy(*listen, *upstream, *advertise, int32(*maxFrame), log)
	if err != nil {
		log.Error("cannot start", zap.Error(err))
		return 1
	}
	log.Info("proxying", zap.Stringer("listen", p.Addr()), zap.String("upstream", *upstream),
		zap.String("advertised", net.JoinHostPort(p.advHost, strconv.Itoa(int(p.advPort)))))

	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	served := make(chan error, 1)
	go func() { served <- p.serve() }()
	select {
	case err := <-served:
		log.Error("serving failed", zap.Error(err))
		p.close()
		return 1
	case sig := <-signals:
		log.Info("shutting down", zap.Stringer("signal", sig))
	}
	p.close()
	if err := <-served; err != nil {
		log.Error("serving failed", zap.Error(err))
		return 1
	}
	return 0
}
