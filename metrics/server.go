package metrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"
)

// ParseListener reads a metrics.listener value, http://host:port (the
// scheme may be left out), and returns host:port for net.Listen. An empty
// host means all interfaces; port 0 picks a free port.
func ParseListener(v string) (string, error) {
	v = strings.TrimSpace(v)
	addr := v
	if scheme, rest, ok := strings.Cut(v, "://"); ok {
		if !strings.EqualFold(scheme, "http") {
			return "", fmt.Errorf("%q: only http:// is supported", v)
		}
		addr = rest
	}
	addr = strings.TrimSuffix(addr, "/")
	if strings.Contains(addr, "/") {
		return "", fmt.Errorf("%q: want http://host:port without a path (the paths are /metrics and /healthz)", v)
	}
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("%q: want http://host:port", v)
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return "", fmt.Errorf("%q: port must be a number from 0 to 65535", v)
	}
	return net.JoinHostPort(host, strconv.FormatUint(port, 10)), nil
}

// Handler serves /metrics (the Prometheus exposition formats, negotiated)
// and /healthz: 200 "ok" while the broker serves and every partition takes
// writes, else 503 with the reason (the offline partitions, one a line).
func (m *Metrics) Handler(log *zap.Logger) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		ErrorLog:      zap.NewStdLog(log.Named("metrics")),
		ErrorHandling: promhttp.ContinueOnError,
	}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if !m.Ready() {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, "not serving")
			return
		}
		if src := m.storage.Load(); src != nil {
			if offline := src.s.OfflinePartitions(); len(offline) > 0 {
				w.WriteHeader(http.StatusServiceUnavailable)
				fmt.Fprintf(w, "%d offline partitions\n", len(offline))
				for _, o := range offline {
					fmt.Fprintf(w, "%s-%d: %v\n", o.Topic, o.Partition, o.Err)
				}
				return
			}
		}
		fmt.Fprintln(w, "ok")
	})
	return mux
}

// Server is the HTTP listener of metrics.listener.
type Server struct {
	ln  net.Listener
	srv *http.Server
	log *zap.Logger
}

// Listen binds listener (a metrics.listener value) for m's handler; Serve
// starts answering.
func Listen(listener string, m *Metrics, log *zap.Logger) (*Server, error) {
	addr, err := ParseListener(listener)
	if err != nil {
		return nil, fmt.Errorf("metrics.listener: %w", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics.listener: listen: %w", err)
	}
	return &Server{
		ln: ln,
		srv: &http.Server{
			Handler:           m.Handler(log),
			ReadHeaderTimeout: 10 * time.Second,
			ErrorLog:          zap.NewStdLog(log.Named("metrics.http")),
		},
		log: log,
	}, nil
}

// Addr is the bound address.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Serve answers until Shutdown or Close, then returns nil.
func (s *Server) Serve() error {
	if err := s.srv.Serve(s.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("metrics server: %w", err)
	}
	return nil
}

// Shutdown stops the server, letting in-flight scrapes finish until ctx
// ends. It also releases a listener Serve never ran on.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	if cerr := s.ln.Close(); cerr != nil && !errors.Is(cerr, net.ErrClosed) && err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("metrics server shutdown: %w", err)
	}
	return nil
}
