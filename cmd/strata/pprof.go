package main

import (
	"net"
	"net/http"
	"net/http/pprof"

	"go.uber.org/zap"
)

// servePprof serves the runtime profiles (/debug/pprof/...) on addr, on a
// listener of their own, for profiling the broker under load (bench/).
func servePprof(addr string, log *zap.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	log.Info("serving pprof", zap.String("pprof", "http://"+ln.Addr().String()+"/debug/pprof/"))
	go func() { _ = http.Serve(ln, mux) }()
	return nil
}
