package main

import (
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/strata-io/strata/compat-tests/runners/rt"
)

// securityArgs are the runner's security arguments as kcat's -X options.
func (e env) securityArgs() []string {
	conf := e.a.Security().Librdkafka()
	var keys []string
	for k := range conf {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var args []string
	for _, k := range keys {
		args = append(args, "-X", k+"="+conf[k])
	}
	return args
}

// librdkafkaRE finds the librdkafka version in `kcat -V`.
var librdkafkaRE = regexp.MustCompile(`librdkafka (\d+)\.(\d+)\.(\d+)`)

// scramBroken says why kcat's librdkafka cannot authenticate with SCRAM
// to Kafka 4 ("" when it can): before 2.6.1 its client-final-message
// repeats the client nonce (librdkafka#4895), which Kafka 4's strict
// nonce check, as RFC 5802 has it, rejects.
func scramBroken() string {
	out, _ := exec.Command("kcat", "-V").CombinedOutput()
	m := librdkafkaRE.FindStringSubmatch(string(out))
	if m == nil {
		return ""
	}
	var v [3]int
	for i := range v {
		v[i], _ = strconv.Atoi(m[i+1])
	}
	if v[0] > 2 || v[0] == 2 && (v[1] > 6 || v[1] == 6 && v[2] >= 1) {
		return ""
	}
	return fmt.Sprintf("kcat runs librdkafka %s.%s.%s, whose SCRAM client-final-message repeats the client nonce (fixed in 2.6.1, librdkafka#4895): Kafka 4 rejects it", m[1], m[2], m[3])
}

func (e env) auth() rt.Result {
	s := e.a.Security()
	if strings.HasPrefix(s.Mechanism, "SCRAM-") {
		if why := scramBroken(); why != "" {
			return rt.Skip(why)
		}
	}
	if err := e.produce(rt.AuthRecords()); err != nil {
		return rt.Failf("%s: produce: %v", s, err)
	}
	got, err := e.consume()
	return rt.AuthResult(s, err, got)
}

// aclAllowed produces the auth records and consumes them back in the
// scenario's group (kcat -G).
func (e env) aclAllowed() rt.Result {
	s := e.a.Security()
	if err := e.produce(rt.AuthRecords()); err != nil {
		return rt.Failf("%s: produce: %v", s, err)
	}
	got, err := e.groupRun(len(rt.AuthRecords()))
	return rt.AuthResult(s, err, got)
}

// failRE is librdkafka's log line of a failed connection, without its
// timestamp: "%3|1796167272.225|FAIL|rdkafka#producer-1| [thrd:...]: <message>".
var failRE = regexp.MustCompile(`(?m)\|FAIL\|[^|]*\| \[thrd:[^\]]*\]: (.*)$`)

// authRefused asks for metadata (kcat -L) within rt.RefusalBound; the error
// is librdkafka's first FAIL line, or kcat's own message.
func (e env) authRefused() rt.Result {
	secs := int(rt.RefusalBound/time.Second) - 5
	out, serr, err := e.kcat(nil, rt.RefusalBound+5*time.Second, "-L", "-m", fmt.Sprint(secs))
	if err == nil {
		return rt.RefusedResult(e.a.Scenario, nil, false)
	}
	if strings.Contains(err.Error(), "timed out") {
		return rt.RefusedResult(e.a.Scenario, nil, true)
	}
	msg := short(serr + out)
	if m := failRE.FindStringSubmatch(serr); m != nil {
		msg = m[1]
	}
	return rt.RefusedResult(e.a.Scenario, errors.New(msg), false)
}

// aclDenied produces the auth records once (kcat -P), within rt.RefusalBound.
func (e env) aclDenied() rt.Result {
	err, hung := rt.Bounded(func() error { return e.produce(rt.AuthRecords()) })
	return rt.RefusedResult(e.a.Scenario, err, hung)
}

// aclGroupDenied consumes in the scenario's group (kcat -G) within
// rt.RefusalBound; the error is kcat's.
func (e env) aclGroupDenied() rt.Result {
	_, serr, err := e.kcat(nil, rt.RefusalBound, "-G", e.a.Group(), "-c", "1", "-q", "-X", "auto.offset.reset=earliest", e.a.Topic)
	switch {
	case err != nil && strings.Contains(err.Error(), "timed out"):
		return rt.GroupRefusedResult(e.a.Topic, nil, true)
	case err == nil && !strings.Contains(serr, "ERROR"):
		return rt.GroupRefusedResult(e.a.Topic, nil, false)
	}
	return rt.GroupRefusedResult(e.a.Topic, errors.New(short(serr)), false)
}
