package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// restartScenarios restart a node of their target while they run: the
// runner asks the orchestrator to, with an HTTP POST to the URL it gets
// as --arg restart (see clients/RUNNERS.md), naming the node
// (&node=ID, default 1) and the orchestrator answers once the node is
// back and every node's Metadata lists all the target's nodes. They run
// after every other cell, one at a time per target (the targets in
// parallel), so no other cell sees the restart, with scenarioTimeouts'
// time instead of -timeout.
var restartScenarios = []string{"group_consumer_restart"}

// scenarioTimeouts replace -timeout for the scenarios that need longer
// (their runners' budgets are rt.Budget's): fetch_sessions creates and
// fills 200 partitions, three replicas each on a cluster; the Kafka Streams
// applications start a JVM, create their internal topics and rebalance; a restart's
// controlled shutdown and JVM start on the loaded machine come on top of
// the scenario's own 45 s.
var scenarioTimeouts = map[string]time.Duration{"fetch_sessions": 120 * time.Second, "group_consumer_restart": 300 * time.Second,
	"streams_wordcount_classic": 120 * time.Second, "streams_wordcount_streams": 120 * time.Second}

func isRestartScenario(s string) bool {
	for _, x := range restartScenarios {
		if x == s {
			return true
		}
	}
	return false
}

// restartServer serves POST /restart?target=NAME&node=ID on a loopback
// port and returns its base URL; it stops with the harness.
func (h *harness) restartServer() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/restart", h.serveRestart)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(l)
	h.atExit(func() { srv.Close() })
	return "http://" + l.Addr().String() + "/restart", nil
}

// serveRestart restarts the node the request names and answers
// {"node":ID,"secs":S}, or 500 with why not.
func (h *harness) serveRestart(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	b := h.targets[r.URL.Query().Get("target")]
	id := 1
	if s := r.URL.Query().Get("node"); s != "" {
		var err error
		if id, err = strconv.Atoi(s); err != nil {
			http.Error(w, "node: "+err.Error(), http.StatusBadRequest)
			return
		}
	}
	if b == nil || !b.up() || id < 1 || id > len(b.nodes) {
		http.Error(w, fmt.Sprintf("no node %d of target %q", id, r.URL.Query().Get("target")), http.StatusBadRequest)
		return
	}
	t := time.Now()
	if err := h.restartNode(b, b.nodes[id-1]); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	secs := time.Since(t).Seconds()
	fmt.Printf("compat: %s: node %d restarted in %.1fs\n", b.name, id, secs)
	json.NewEncoder(w).Encode(map[string]any{"node": id, "secs": secs})
}

// restartNode stops nd as the harness stops a target (SIGTERM, SIGKILL
// after 30 s), waits until its ports are free, starts it again with the
// same command line and data, and waits until every node of b lists all
// of them.
func (h *harness) restartNode(b *broker, nd *node) error {
	syscall.Kill(-nd.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-nd.exited:
	case <-time.After(30 * time.Second):
		syscall.Kill(-nd.cmd.Process.Pid, syscall.SIGKILL)
		<-nd.exited
	}
	for _, port := range []int{b.client[nd.id-1], b.ctrl[nd.id-1]} {
		if err := waitBindable(port, 90*time.Second); err != nil {
			return fmt.Errorf("%s node %d: %w", b.name, nd.id, err)
		}
	}
	if err := h.launch(nd, nd.argv...); err != nil {
		return fmt.Errorf("%s node %d: relaunch: %w", b.name, nd.id, err)
	}
	if err := h.waitReady(b, 120*time.Second); err != nil {
		return err
	}
	return waitAnswers(nd.addr, 60*time.Second)
}

// waitBindable waits until a listener can bind 127.0.0.1:port: nothing
// holds it (see freePort).
func waitBindable(port int, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			return l.Close()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("port %d still busy after %s: %w", port, d, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// waitAnswers waits until the node at addr answers FindCoordinator for a
// group without an error: its group coordinator (a single node's own)
// serves again.
func waitAnswers(addr string, d time.Duration) error {
	deadline := time.Now().Add(d)
	var last error
	for time.Now().Before(deadline) {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorKeys = []string{"compat-restart-probe"}
		resp, err := req.RequestWith(ctx, cl.SeedBrokers()[0])
		cancel()
		cl.Close()
		if err == nil && len(resp.Coordinators) == 1 && resp.Coordinators[0].ErrorCode == 0 {
			return nil
		}
		last = err
		if err == nil && len(resp.Coordinators) == 1 {
			last = fmt.Errorf("FindCoordinator error code %d", resp.Coordinators[0].ErrorCode)
		}
		time.Sleep(300 * time.Millisecond)
	}
	return fmt.Errorf("%s: group coordinator not serving after %s: %v", addr, d, last)
}
