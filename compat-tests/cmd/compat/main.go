// Command compat is the compat-tests orchestrator: it builds Strata and the runners, starts
// Strata and a reference Apache Kafka, runs every client × scenario against both, runs the
// cross-client and on-disk (DumpLogSegments) checks, and writes report/matrix.{json,md}.
// It exits non-zero only when a cell listed in expected-pass.txt is not a pass on Strata,
// or when the harness itself broke. Run it from compat-tests/ (make compat does).
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/strata-io/strata/compat-tests/runners/rt"
)

type cell struct {
	Client   string         `json:"client"`
	Scenario string         `json:"scenario"`
	Broker   string         `json:"broker"`
	Result   string         `json:"result"`
	Detail   string         `json:"detail"`
	Data     map[string]any `json:"-"`
	Secs     float64        `json:"-"`
}

type harness struct {
	root      string // absolute compat-tests dir
	runID     string
	logDir    string
	timeout   time.Duration
	jobs      int
	keep      bool
	mu        sync.Mutex
	cells     []cell
	cleanups  []func()
	once      sync.Once
	clients   map[string]*sync.Once
	clientEr  map[string]error
	broken    []string
	strataSrc string
	// rf is the replication factor of every topic the harness and the runners create on a
	// single-node target (a cluster target's is its node count).
	rf int16
	// targets are the selected targets by name, down those that could not start (downErr why).
	targets map[string]*broker
	down    []*broker
	downErr []error
}

func main() {
	h := &harness{clients: map[string]*sync.Once{}, clientEr: map[string]error{}, targets: map[string]*broker{}}
	onlyClients := flag.String("clients", "", "comma-separated client names to run (default all)")
	onlyScen := flag.String("scenarios", "", "comma-separated scenarios to run (default all)")
	flag.DurationVar(&h.timeout, "timeout", 60*time.Second, "timeout of one runner invocation")
	flag.IntVar(&h.jobs, "j", 3, "runner invocations in parallel")
	flag.BoolVar(&h.keep, "keep", false, "keep broker temp dirs")
	flag.StringVar(&h.strataSrc, "strata-src", "..", "Strata's source tree (the main module) to build")
	rf := flag.Int("replication-factor", 1, "replication factor of every topic the harness and the runners create on the single-node targets")
	targets := flag.String("targets", targetNames(), "comma-separated targets (matrix columns) to run")
	clusterSkip := flag.String("cluster-skip", defaultClusterSkip, "comma-separated clients and scenarios the cluster targets leave out ('' runs every cell there too)")
	expected := flag.String("expected", "expected-pass.txt", "expected-pass list")
	outDir := flag.String("out", "report", "report directory")
	flag.Parse()
	if *rf < 1 || *rf > 32767 {
		fatal(fmt.Errorf("-replication-factor %d: want 1..32767", *rf))
	}
	h.rf = int16(*rf)
	sel := targetSel{clusterSkip: filter(*clusterSkip)}
	var err error
	if sel.names, err = parseTargets(*targets); err != nil {
		fatal(err)
	}
	root, err := os.Getwd()
	if err != nil {
		fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "runners", "rt")); err != nil {
		fatal(fmt.Errorf("run from compat-tests/ (no runners/rt under %s)", root))
	}
	h.root = root
	h.runID = strconv.FormatInt(time.Now().Unix()%1_000_000, 36)
	h.logDir = filepath.Join(root, ".cache", "logs", "run-"+h.runID)
	os.MkdirAll(h.logDir, 0o755)
	start := time.Now()

	sigc := make(chan os.Signal, 1)
	signal.Notify(sigc, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		s := <-sigc
		fmt.Fprintf(os.Stderr, "compat: %v: stopping brokers\n", s)
		h.cleanup()
		os.Exit(2)
	}()
	code := h.run(sel, filter(*onlyClients), filter(*onlyScen), *expected, *outDir)
	h.cleanup()
	fmt.Printf("compat: done in %s (logs in %s)\n", time.Since(start).Round(time.Second), rel(root, h.logDir))
	os.Exit(code)
}

func filter(s string) map[string]bool {
	if s == "" {
		return nil
	}
	m := map[string]bool{}
	for _, x := range strings.Split(s, ",") {
		m[strings.TrimSpace(x)] = true
	}
	return m
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "compat:", err)
	os.Exit(2)
}

func rel(base, p string) string {
	if r, err := filepath.Rel(base, p); err == nil {
		return r
	}
	return p
}

func (h *harness) atExit(f func()) {
	h.mu.Lock()
	h.cleanups = append(h.cleanups, f)
	h.mu.Unlock()
}

func (h *harness) cleanup() {
	h.once.Do(func() {
		h.mu.Lock()
		fs := h.cleanups
		h.mu.Unlock()
		for i := len(fs) - 1; i >= 0; i-- {
			fs[i]()
		}
	})
}

func (h *harness) breakf(format string, a ...any) {
	msg := fmt.Sprintf(format, a...)
	fmt.Fprintln(os.Stderr, "compat: HARNESS:", msg)
	h.mu.Lock()
	h.broken = append(h.broken, msg)
	h.mu.Unlock()
}

// command runs argv in dir with output to a log file; the error carries the output's tail.
func (h *harness) command(logName, dir string, env []string, argv ...string) error {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err := cmd.Run()
	os.WriteFile(filepath.Join(h.logDir, logName+".log"), buf.Bytes(), 0o644)
	if err != nil {
		return fmt.Errorf("%s: %v: %s", strings.Join(argv, " "), err, tailStr(buf.String(), 600))
	}
	return nil
}

func tailStr(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		s = "…" + s[len(s)-n:]
	}
	return s
}

func (h *harness) goBuild(pkg, out string, cgo bool) error {
	env := []string{"CGO_ENABLED=0"}
	if cgo {
		env = []string{"CGO_ENABLED=1"}
	}
	return h.command("build-"+filepath.Base(out), h.root, env, "go", "build", "-o", out, pkg)
}

func (h *harness) runScript(name, script string) error {
	return h.command("install-"+name, h.root, nil, "bash", script)
}

func (h *harness) kafkaInstalled() error {
	if _, err := os.Stat(filepath.Join(h.root, kafkaHome, "VERSION")); err != nil {
		return errors.New("Kafka jars not installed (scripts/install-kafka.sh failed)")
	}
	return nil
}

// clientsInstall runs scripts/install-clients.sh TARGET once per target.
func (h *harness) clientsInstall(target string) error {
	h.mu.Lock()
	o, ok := h.clients[target]
	if !ok {
		o = &sync.Once{}
		h.clients[target] = o
	}
	h.mu.Unlock()
	o.Do(func() {
		script := filepath.Join(h.root, "scripts", "install-clients.sh")
		if _, err := os.Stat(script); err != nil {
			h.clientEr[target] = errors.New("scripts/install-clients.sh is missing")
			return
		}
		h.clientEr[target] = h.command("install-clients-"+target, h.root, nil, "bash", script, target)
	})
	return h.clientEr[target]
}

func (h *harness) add(c cell) {
	h.mu.Lock()
	h.cells = append(h.cells, c)
	h.mu.Unlock()
}

func (h *harness) run(targets targetSel, onlyClients, onlyScen map[string]bool, expectedPath, outDir string) int {
	t0 := time.Now()
	// 1. Strata and the Kafka reference.
	if err := h.command("build-strata", h.strataSrc, []string{"CGO_ENABLED=0"}, "go", "build", "-o", filepath.Join(h.root, ".cache/bin/strata"), "./cmd/strata"); err != nil {
		h.breakf("build strata: %v", err)
		return 2
	}
	if err := h.command("install-kafka", h.root, nil, "bash", "scripts/install-kafka.sh"); err != nil {
		h.breakf("install kafka: %v", err)
	}
	fmt.Printf("compat: strata built, kafka installed (%s)\n", time.Since(t0).Round(time.Second))

	// 2. Runners.
	var clients []clientDef
	skipReason := map[string]string{}
	for _, c := range registry() {
		if onlyClients != nil && !onlyClients[c.Name] {
			continue
		}
		clients = append(clients, c)
		t := time.Now()
		var reason string
		if c.Install != nil {
			if err := c.Install(h); err != nil {
				reason = "install failed: " + tailStr(err.Error(), 400)
			}
		}
		if reason == "" && c.Ready != nil {
			reason = c.Ready()
		}
		skipReason[c.Name] = reason
		status := "ready"
		if reason != "" {
			status = "SKIP (" + reason + ")"
		}
		fmt.Printf("compat: client %-22s %s (%s)\n", c.Name, status, time.Since(t).Round(100*time.Millisecond))
	}
	var scen []string
	for _, s := range allScenarios() {
		if onlyScen == nil || onlyScen[s] {
			scen = append(scen, s)
		}
	}

	// 3. The targets, started in parallel.
	brokers, pairs := h.startTargets(targets)
	if brokers == nil {
		return 2
	}
	var up []string
	for _, b := range brokers {
		up = append(up, b.name+" "+b.addr)
	}
	fmt.Printf("compat: brokers up: %s (%s)\n", strings.Join(up, ", "), time.Since(t0).Round(time.Second))

	// 4. Every client × scenario × broker (cross_consume afterwards), the
	// restart scenarios after the others, one at a time per target (restart.go).
	var jobs, restarts []job
	for _, c := range clients {
		for _, s := range scen {
			for _, b := range brokers {
				if !c.runs(s) || !b.covers(c.Name, s) {
					continue
				}
				if r := skipReason[c.Name]; r != "" {
					h.add(cell{Client: c.Name, Scenario: s, Broker: b.name, Result: "skip", Detail: r})
					continue
				}
				if s == "cross_consume" {
					continue
				}
				if slices.Contains(c.Lacks, s) {
					h.add(cell{Client: c.Name, Scenario: s, Broker: b.name, Result: "skip", Detail: "the " + c.Name + " runner does not implement " + s})
					continue
				}
				j := job{client: c, scenario: s, broker: b, topic: h.topic(c.Name, s, b)}
				if b.sec != nil {
					j.bootstrap, j.extra = b.sec.runnerArgs(s)
				}
				j.timeout = scenarioTimeouts[s]
				if isRestartScenario(s) {
					restarts = append(restarts, j)
					continue
				}
				jobs = append(jobs, j)
			}
		}
	}
	h.skipUnavailable(clients, scen)
	h.runJobs(jobs, h.jobs)
	if len(restarts) > 0 {
		url, err := h.restartServer()
		if err != nil {
			h.breakf("restart server: %v", err)
			return 2
		}
		byTarget := map[*broker][]job{}
		for _, j := range restarts {
			j.extra = append(j.extra, "restart="+url+"?target="+j.broker.name)
			byTarget[j.broker] = append(byTarget[j.broker], j)
		}
		var wg sync.WaitGroup
		for _, js := range byTarget {
			wg.Add(1)
			go func() { defer wg.Done(); h.runJobs(js, 1) }()
		}
		wg.Wait()
	}

	// 5. Cross-client: every producer's topic read by every other client.
	if onlyScen == nil || onlyScen["cross_consume"] {
		h.crossPhase(clients, skipReason, brokers)
	}

	// 6. On-disk compatibility.
	if onlyScen == nil || onlyScen["dump_log"] {
		for _, p := range pairs {
			if !h.targets[p.strata].secure {
				h.dumpLog(p)
			}
		}
	}

	// 7. Cross-broker comparisons, report, verdict.
	h.compareErrors(pairs)
	if err := h.writeReports(outDir, pairs); err != nil {
		h.breakf("write report: %v", err)
	}
	if err := h.writeAPIVersions(outDir, pairs); err != nil {
		h.breakf("write the ApiVersions report: %v", err)
	}
	return h.verdict(expectedPath, onlyClients, onlyScen)
}

func (h *harness) topic(client, scenario string, b *broker) string {
	short := strings.NewReplacer("confluent-kafka-python", "ckpy", "confluent-kafka-go", "ckgo", "kafka-python", "kpy",
		"kafka-java", "java", "kafka-cli", "cli", "franz-go", "franz").Replace(client)
	return fmt.Sprintf("c%s-%s-%s-%s", h.runID, short, strings.ReplaceAll(scenario, "_", "-"), b.tag)
}

type job struct {
	client   clientDef
	scenario string
	broker   *broker
	topic    string
	extra    []string // --arg K=V values
	// bootstrap, if set, is the runner's --bootstrap instead of the target's
	// PLAINTEXT addresses (a secure scenario's listener).
	bootstrap string
	// logSuffix follows the scenario in the run's log file name.
	logSuffix string
	// sink, if set, receives the result instead of the matrix.
	sink func(cell)
	// timeout, if set, replaces -timeout.
	timeout time.Duration
}

// runJobs runs jobs, n at a time.
func (h *harness) runJobs(jobs []job, n int) {
	ch := make(chan job)
	var wg sync.WaitGroup
	var done int
	var dmu sync.Mutex
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range ch {
				c := h.runOne(j)
				dmu.Lock()
				done++
				n := done
				dmu.Unlock()
				fmt.Printf("[%3d/%3d] %-14s %-22s %-24s %-4s %5.1fs %s\n", n, len(jobs), j.broker.name, j.client.Name, j.scenario, c.Result, c.Secs, oneLine(c.Detail, 90))
				if j.sink != nil {
					j.sink(c)
				} else {
					h.add(c)
				}
			}
		}()
	}
	// Interleave brokers so both are busy.
	for _, j := range jobs {
		ch <- j
	}
	close(ch)
	wg.Wait()
}

func oneLine(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}

func (h *harness) runOne(j job) (c cell) {
	c = cell{Client: j.client.Name, Scenario: j.scenario, Broker: j.broker.name}
	t := time.Now()
	defer func() { c.Secs = time.Since(t).Seconds() }()
	// The secure scenarios' topics are created through the PLAINTEXT listener
	// for every client: what they test is the client's secured connection.
	if isSecureScenario(j.scenario) || j.client.PreCreate && j.scenario != "create_topic" && j.scenario != "create_partitions" && j.scenario != "delete_topic" && j.scenario != "cross_consume" && !slices.Contains(j.client.SelfCreate, j.scenario) {
		if err := createTopic(j.broker.seeds(), j.topic, rt.Partitions(j.scenario), j.broker.rf); err != nil {
			c.Result, c.Detail = "fail", "orchestrator pre-create of the topic (franz-go) failed: "+err.Error()
			c.Secs = time.Since(t).Seconds()
			return c
		}
	}
	if strings.HasPrefix(j.scenario, "acl_") {
		if err := grantACLs(j.broker.seeds(), j.scenario, j.topic); err != nil {
			c.Result, c.Detail = "fail", "orchestrator grant of bob's ACLs (franz-go) failed: "+err.Error()
			return c
		}
	}
	argv := append([]string{}, j.client.Argv...)
	bootstrap := j.broker.addr
	if j.bootstrap != "" {
		bootstrap = j.bootstrap
	}
	argv = append(argv, "--bootstrap", bootstrap, "--scenario", j.scenario, "--topic", j.topic,
		"--replication-factor", strconv.Itoa(int(j.broker.rf)))
	for _, e := range j.extra {
		argv = append(argv, "--arg", e)
	}
	timeout := h.timeout
	if j.timeout > 0 {
		timeout = j.timeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = h.root
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		c.Result, c.Detail = "fail", "cannot start runner: "+err.Error()
		return c
	}
	waitc := make(chan error, 1)
	go func() { waitc <- cmd.Wait() }()
	var werr error
	timedOut := false
	select {
	case werr = <-waitc:
	case <-ctx.Done():
		timedOut = true
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		werr = <-waitc
	}
	// Kill leftovers of the process group (JVM/node helpers), if any.
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	logName := filepath.Join(h.logDir, j.broker.name, j.client.Name+"."+j.scenario+j.logSuffix+".log")
	os.MkdirAll(filepath.Dir(logName), 0o755)
	os.WriteFile(logName, []byte(strings.Join(argv, " ")+"\n--- stdout\n"+stdout.String()+"\n--- stderr\n"+stderr.String()), 0o644)
	if timedOut {
		c.Result, c.Detail = "fail", fmt.Sprintf("timeout after %s; stderr: %s", timeout, tailStr(stderr.String(), 400))
		return c
	}
	var res rt.Result
	line := lastLine(stdout.String())
	if err := json.Unmarshal([]byte(line), &res); err != nil || (res.Result != "pass" && res.Result != "fail" && res.Result != "skip") {
		c.Result, c.Detail = "fail", fmt.Sprintf("runner crashed (%v) without a result line; stderr: %s", werr, tailStr(stderr.String(), 400))
		return c
	}
	c.Result, c.Detail, c.Data = res.Result, res.Detail, res.Data
	return c
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			return l
		}
	}
	return ""
}

// crossPhase checks each client's cross_produce topic with franz-go, then has every other
// client read it; a client's cross_consume cell passes if it read every verified topic
// byte-identically.
func (h *harness) crossPhase(clients []clientDef, skipReason map[string]string, brokers []*broker) {
	for _, b := range brokers {
		producers := map[string]string{} // client -> topic verified
		for _, c := range clients {
			pc := h.find(c.Name, "cross_produce", b.name)
			if pc == nil || pc.Result != "pass" {
				continue
			}
			topic := h.topic(c.Name, "cross_produce", b)
			recs, err := readAll(b.seeds(), topic, 20)
			if err == nil {
				if d := rt.CrossResult(recs, c.Name); d.Result != "pass" {
					err = errors.New(d.Detail)
				}
			}
			if err != nil {
				h.mu.Lock()
				pc.Result, pc.Detail = "fail", "produced, but franz-go reads it differently from the CROSS set: "+err.Error()
				h.mu.Unlock()
				continue
			}
			pc.Detail += "; franz-go read it byte-identical"
			producers[c.Name] = topic
		}
		type pair struct{ consumer, producer string }
		results := map[pair]cell{}
		var rmu sync.Mutex
		var jobs []job
		for _, c := range clients {
			if skipReason[c.Name] != "" || !c.runs("cross_consume") || !b.covers(c.Name, "cross_consume") {
				continue
			}
			for _, p := range clients {
				topic, ok := producers[p.Name]
				if !ok || p.Name == c.Name {
					continue
				}
				pr := pair{c.Name, p.Name}
				jobs = append(jobs, job{client: c, scenario: "cross_consume", broker: b, topic: topic, extra: []string{"expect_from=" + p.Name}, logSuffix: "expect_from-" + p.Name,
					sink: func(x cell) { rmu.Lock(); results[pr] = x; rmu.Unlock() }})
			}
		}
		h.runJobs(jobs, h.jobs)
		for _, c := range clients {
			if skipReason[c.Name] != "" || !c.runs("cross_consume") || !b.covers(c.Name, "cross_consume") {
				continue
			}
			var ok, bad []string
			for _, p := range clients {
				x, found := results[pair{c.Name, p.Name}]
				if !found {
					continue
				}
				if x.Result == "pass" {
					// The orchestrator checks the dump itself as well.
					if d := checkCrossData(x.Data, p.Name); d != "" {
						x.Result, x.Detail = "fail", d
					}
				}
				if x.Result == "pass" {
					ok = append(ok, p.Name)
				} else {
					bad = append(bad, fmt.Sprintf("from %s: %s %s", p.Name, x.Result, oneLine(x.Detail, 300)))
				}
			}
			cc := cell{Client: c.Name, Scenario: "cross_consume", Broker: b.name}
			switch {
			case len(ok)+len(bad) == 0:
				cc.Result, cc.Detail = "skip", "no other client's cross_produce topic was verified on this broker"
			case len(bad) == 0:
				cc.Result, cc.Detail = "pass", fmt.Sprintf("read byte-identical from %d producers: %s", len(ok), strings.Join(ok, ", "))
			default:
				cc.Result, cc.Detail = "fail", fmt.Sprintf("%d of %d producers wrong: %s", len(bad), len(ok)+len(bad), strings.Join(bad, "; "))
			}
			h.add(cc)
		}
	}
}

func checkCrossData(data map[string]any, src string) string {
	raw, err := json.Marshal(data["records"])
	if err != nil {
		return "data.records: " + err.Error()
	}
	var recs []rt.CrossRec
	if err := json.Unmarshal(raw, &recs); err != nil {
		return "data.records is not a list of {offset,key,value,headers}: " + err.Error()
	}
	if d := rt.CheckCross(recs, src); d != "" {
		return "orchestrator check: " + d
	}
	return ""
}

func (h *harness) find(client, scenario, broker string) *cell {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := range h.cells {
		c := &h.cells[i]
		if c.Client == client && c.Scenario == scenario && c.Broker == broker {
			return c
		}
	}
	return nil
}

// comparedErrors are the scenarios whose error (data.error) must be Kafka's.
var comparedErrors = []string{"max_message_size", "auth_bad_password", "auth_no_tls", "acl_denied", "acl_group_denied", "acl_deny_wins", "delegation_token"}

// compareErrors downgrades a Strata pass of a comparedErrors scenario whose
// error differs from Kafka's, the topic's name (which differs per target)
// read as TOPIC (and the secure ones' addresses taken out, see comparableError).
func (h *harness) compareErrors(pairs []brokerPair) {
	for _, p := range pairs {
		for i := range h.cells {
			s := &h.cells[i]
			if s.Broker != p.strata || !slices.Contains(comparedErrors, s.Scenario) || s.Result != "pass" {
				continue
			}
			k := h.find(s.Client, s.Scenario, p.kafka)
			if k == nil || k.Result != "pass" {
				continue
			}
			se := comparableError(s.Scenario, strings.ReplaceAll(fmt.Sprint(s.Data["error"]), h.topic(s.Client, s.Scenario, h.targets[p.strata]), "TOPIC"))
			ke := comparableError(k.Scenario, strings.ReplaceAll(fmt.Sprint(k.Data["error"]), h.topic(k.Client, k.Scenario, h.targets[p.kafka]), "TOPIC"))
			if se != ke {
				s.Result = "fail"
				s.Detail = fmt.Sprintf("error differs from Kafka's: strata reports %q, kafka %q (%s)", se, ke, s.Detail)
			} else {
				s.Detail = fmt.Sprintf("same error as Kafka (%s); %s", se, s.Detail)
			}
		}
	}
}

func (h *harness) verdict(path string, onlyClients, onlyScen map[string]bool) int {
	code := 0
	if len(h.broken) > 0 {
		fmt.Printf("compat: HARNESS BROKE: %s\n", strings.Join(h.broken, "; "))
		code = 2
	}
	f, err := os.Open(path)
	if err != nil {
		fmt.Printf("compat: no %s: %v\n", path, err)
		return 2
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	var missing []string
	n := 0
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fs := strings.Fields(line)
		if len(fs) == 2 {
			fs = append(fs, "strata")
		}
		if len(fs) != 3 || (fs[2] != "strata" && fs[2] != "strata-cluster" && fs[2] != "strata-secure") {
			fmt.Printf("compat: %s: bad line %q\n", path, line)
			code = 2
			continue
		}
		b := h.targets[fs[2]]
		if (onlyClients != nil && !onlyClients[fs[0]] && fs[0] != dumpLogClient) || (onlyScen != nil && !onlyScen[fs[1]]) || b == nil || !b.covers(fs[0], fs[1]) {
			continue
		}
		n++
		c := h.find(fs[0], fs[1], fs[2])
		if c == nil {
			missing = append(missing, fmt.Sprintf("%s %s %s: not run", fs[0], fs[1], fs[2]))
		} else if c.Result != "pass" {
			missing = append(missing, fmt.Sprintf("%s %s %s: %s: %s", fs[0], fs[1], fs[2], c.Result, oneLine(c.Detail, 300)))
		}
	}
	if len(missing) > 0 {
		fmt.Printf("compat: %d of %d expected-pass cells did not pass on Strata:\n", len(missing), n)
		for _, m := range missing {
			fmt.Println("  REGRESSION", m)
		}
		if code == 0 {
			code = 1
		}
	} else {
		fmt.Printf("compat: all %d expected-pass cells pass on Strata\n", n)
	}
	return code
}

// sortCells orders cells by registry client order, scenario order, broker.
func sortCells(cells []cell) {
	ci := map[string]int{}
	for i, c := range registry() {
		ci[c.Name] = i
	}
	ci[dumpLogClient] = len(ci)
	si := map[string]int{}
	for i, s := range allScenarios() {
		si[s] = i
	}
	si["dump_log"] = len(si)
	sort.SliceStable(cells, func(a, b int) bool {
		x, y := cells[a], cells[b]
		if ci[x.Client] != ci[y.Client] {
			return ci[x.Client] < ci[y.Client]
		}
		if si[x.Scenario] != si[y.Scenario] {
			return si[x.Scenario] < si[y.Scenario]
		}
		return targetIndex(x.Broker) < targetIndex(y.Broker)
	})
}
