package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/strata-io/strata/compat-tests/runners/rt"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// The scenarios of the Kafka 4.4 capabilities (compat-tests/README.md):
// transactions_v2, group_consumer_restart and delegation_token.

// finalized is the finalized max version level of feature in the
// ApiVersions answer of a broker (0 when not finalized).
func (e *env) finalized(cl *kgo.Client, feature string) (int16, error) {
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(e.ctx, cl)
	if err != nil {
		return 0, fmt.Errorf("ApiVersions: %w", err)
	}
	for _, f := range resp.FinalizedFeatures {
		if f.Name == feature {
			return f.MaxVersionLevel, nil
		}
	}
	return 0, nil
}

// consumeRaw reads n records of partition 0 from the start at the isolation
// level, waiting extra for a surplus one.
func (e *env) consumeRaw(n int, extra time.Duration, iso kgo.IsolationLevel) ([]*kgo.Record, error) {
	cl := e.client(kgo.ConsumeTopics(e.a.Topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(iso))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(e.ctx, 20*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return out, fmt.Errorf("consumed %d of %d records before the deadline", len(out), n)
		}
		fs.EachRecord(func(r *kgo.Record) { out = append(out, r) })
	}
	ctx2, cancel2 := context.WithTimeout(e.ctx, extra)
	defer cancel2()
	cl.PollFetches(ctx2).EachRecord(func(r *kgo.Record) { out = append(out, r) })
	return out, nil
}

// transactionsV2 runs rt.TxnV2Ends' transactions from one transactional id
// under transaction.version 2 (KIP-890 part 2): every transaction's records
// carry the epoch the previous one's end bumped to, DescribeProducers shows
// the bumped epoch after each end, and read_committed sees exactly the
// committed transactions' records.
func (e *env) transactionsV2() rt.Result {
	cl, adm := e.admin()
	defer cl.Close()
	if err := e.ensureTopic(adm, 1); err != nil {
		return e.failf("%v", err)
	}
	tv, err := e.finalized(cl, "transaction.version")
	if err != nil {
		return e.failf("%v", err)
	}
	if tv < 2 {
		return e.failf("the broker finalizes transaction.version %d, want 2", tv)
	}
	p := e.client(kgo.TransactionalID("tx2-"+e.a.Topic), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.TransactionTimeout(30*time.Second))
	defer p.Close()
	var described []kadm.DescribedProducer
	var committed []string
	for t, end := range rt.TxnV2Ends {
		ctx, cancel := context.WithTimeout(e.ctx, 20*time.Second)
		err := p.BeginTransaction()
		var rs []rt.Rec
		for i := range rt.TxnV2Records {
			rs = append(rs, rt.Rec{Value: []byte(rt.TxnV2Value(t, i))})
			if end == "commit" {
				committed = append(committed, rt.TxnV2Value(t, i))
			}
		}
		if err == nil {
			err = p.ProduceSync(ctx, toKgo(e.a.Topic, rs)...).FirstErr()
		}
		if err == nil {
			err = p.EndTransaction(ctx, kgo.TransactionEndTry(end == "commit"))
		}
		cancel()
		if err != nil {
			return e.failf("transaction %d (%s): %v", t, end, err)
		}
		// The coordinator writes the markers after EndTxn answers: wait
		// until the partition's producer has no open transaction.
		var ps []kadm.DescribedProducer
		err = waitUntil(e.ctx, 10*time.Second, func() (bool, error) {
			d, err := adm.DescribeProducers(e.ctx, kadm.TopicsSet{e.a.Topic: {0: {}}})
			if err != nil {
				return false, err
			}
			ps = d.SortedProducers()
			return len(ps) == 1 && ps[0].CurrentTxnStartOffset == -1, nil
		})
		if err != nil {
			return e.failf("DescribeProducers after transaction %d: %+v: %v", t, ps, err)
		}
		described = append(described, ps[0])
	}
	all, err := e.consumeRaw(len(rt.TxnV2Ends)*rt.TxnV2Records, time.Second, kgo.ReadUncommitted())
	if err != nil {
		return e.failf("read_uncommitted consume: %v", err)
	}
	if len(all) != len(rt.TxnV2Ends)*rt.TxnV2Records {
		return e.failf("read_uncommitted saw %d records, want %d", len(all), len(rt.TxnV2Ends)*rt.TxnV2Records)
	}
	var epochs []int16
	for i, r := range all {
		t, want := i/rt.TxnV2Records, rt.TxnV2Value(i/rt.TxnV2Records, i%rt.TxnV2Records)
		if string(r.Value) != want {
			return e.failf("read_uncommitted record %d is %q, want %q", i, r.Value, want)
		}
		if r.ProducerID != described[0].ProducerID {
			return e.failf("record %q has producer id %d, DescribeProducers %d", r.Value, r.ProducerID, described[0].ProducerID)
		}
		if i%rt.TxnV2Records == 0 {
			epochs = append(epochs, r.ProducerEpoch)
		} else if r.ProducerEpoch != epochs[t] {
			return e.failf("transaction %d's records have epochs %d and %d", t, epochs[t], r.ProducerEpoch)
		}
	}
	var seen []int16
	for t, d := range described {
		seen = append(seen, d.ProducerEpoch)
		if d.ProducerID != described[0].ProducerID || d.ProducerEpoch != epochs[t]+1 {
			return e.failf("after transaction %d (records at epoch %d) DescribeProducers shows producer %d epoch %d, want producer %d epoch %d (record epochs %v)",
				t, epochs[t], d.ProducerID, d.ProducerEpoch, described[0].ProducerID, epochs[t]+1, epochs)
		}
	}
	got, err := e.consumeRaw(len(committed), 1500*time.Millisecond, kgo.ReadCommitted())
	if err != nil {
		return e.failf("read_committed consume: %v", err)
	}
	var vals []string
	for _, r := range got {
		vals = append(vals, string(r.Value))
	}
	if !slices.Equal(vals, committed) {
		return e.failf("read_committed saw %v, want %v", vals, committed)
	}
	data := map[string]any{"record_epochs": epochs, "described_epochs": seen, "transaction_version": tv}
	return rt.Pass(fmt.Sprintf("transaction.version %d: %d transactions (%s) at epochs %v, DescribeProducers after each %v; read_committed saw the %d committed records only",
		tv, len(rt.TxnV2Ends), strings.Join(rt.TxnV2Ends, ", "), epochs, seen, len(committed)), data)
}

// groupMember is one member of a ConsumerGroupDescribe answer.
type groupMember struct {
	Epoch      int32    `json:"epoch"`
	Assignment []string `json:"assignment"`
}

// groupState is a KIP-848 group as ConsumerGroupDescribe shows it.
type groupState struct {
	State   string                 `json:"state"`
	Epoch   int32                  `json:"epoch"`
	Members map[string]groupMember `json:"members"`
}

// describeGroup asks ConsumerGroupDescribe (franz-go routes it to the group's coordinator).
func (e *env) describeGroup(cl *kgo.Client, g string) (groupState, error) {
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{g}
	ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return groupState{}, err
	}
	if len(resp.Groups) != 1 {
		return groupState{}, fmt.Errorf("ConsumerGroupDescribe answered %d groups", len(resp.Groups))
	}
	d := resp.Groups[0]
	if err := kerr.ErrorForCode(d.ErrorCode); err != nil {
		return groupState{}, err
	}
	s := groupState{State: d.State, Epoch: d.Epoch, Members: map[string]groupMember{}}
	for _, m := range d.Members {
		gm := groupMember{Epoch: m.MemberEpoch}
		for _, t := range m.Assignment.TopicPartitions {
			for _, p := range t.Partitions {
				gm.Assignment = append(gm.Assignment, fmt.Sprintf("%s-%d", t.Topic, p))
			}
		}
		sort.Strings(gm.Assignment)
		s.Members[m.MemberID] = gm
	}
	return s, nil
}

// stable says the group is Stable with want members, each at the group's
// epoch with one partition.
func (s groupState) stable(want int) bool {
	if s.State != "Stable" || len(s.Members) != want {
		return false
	}
	for _, m := range s.Members {
		if m.Epoch != s.Epoch || len(m.Assignment) != 1 {
			return false
		}
	}
	return true
}

// groupConsumerRestart: rt.RestartMembers KIP-848 members share the
// topic's partitions; once they have consumed the first records and
// committed, the orchestrator restarts the group's coordinator. The
// members must keep their ids, epochs and assignments (ConsumerGroupDescribe
// before and after, and no partition callback across the restart), the
// commits must survive, and every record produced before and after the
// restart must reach the group exactly once.
func (e *env) groupConsumerRestart() rt.Result {
	cl, adm := e.admin()
	defer cl.Close()
	parts := int(rt.Partitions(e.a.Scenario))
	if err := e.ensureTopic(adm, int32(parts)); err != nil {
		return e.failf("%v", err)
	}
	produce := func(round string, n int) error {
		var rs []*kgo.Record
		for p := range parts {
			for i := range n {
				rs = append(rs, &kgo.Record{Topic: e.a.Topic, Partition: int32(p), Value: []byte(fmt.Sprintf("%s-p%d-%d", round, p, i))})
			}
		}
		pc := e.client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordDeliveryTimeout(60*time.Second))
		defer pc.Close()
		ctx, cancel := context.WithTimeout(e.ctx, 70*time.Second)
		defer cancel()
		return pc.ProduceSync(ctx, rs...).FirstErr()
	}
	g := e.a.Group()
	// A session that outlives a loaded machine's Kafka restart.
	if err := e.setGroupConfig(cl, g, "consumer.session.timeout.ms", rt.RestartSessionTimeoutMs); err != nil {
		return e.failf("%v", err)
	}
	var mu sync.Mutex
	seen := map[string]int{}
	// Every change of a member's partitions, which a restart the group
	// survives makes none of.
	var changes []string
	change := func(what string) func(context.Context, *kgo.Client, map[string][]int32) {
		return func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			if len(m) > 0 {
				mu.Lock()
				changes = append(changes, fmt.Sprint(what, " ", m))
				mu.Unlock()
			}
		}
	}
	var members []*kgo.Client
	ctx, cancel := context.WithCancel(e.ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
		for _, m := range members {
			m.Close()
		}
	}()
	for range rt.RestartMembers {
		m := e.client(kgo.ConsumerGroup(g), kgo.ConsumeTopics(e.a.Topic), kgo.ServerSideBalancer(), kgo.Balancers(kgo.RangeBalancer()),
			kgo.OnPartitionsAssigned(change("assigned")), kgo.OnPartitionsRevoked(change("revoked")), kgo.OnPartitionsLost(change("lost")),
			kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		members = append(members, m)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				m.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
					mu.Lock()
					seen[string(r.Value)]++
					mu.Unlock()
				})
			}
		}()
	}
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(seen) }
	// The records come once the members share the partitions: a member
	// joining later takes over a partition from its committed offset.
	var before groupState
	err := waitUntil(e.ctx, 30*time.Second, func() (bool, error) {
		var err error
		before, err = e.describeGroup(cl, g)
		return err == nil && before.stable(rt.RestartMembers), nil
	})
	if err != nil {
		return e.failf("the group is %+v, not stable with %d members: %v", before, rt.RestartMembers, err)
	}
	if err := produce("before", rt.RestartBefore); err != nil {
		return e.failf("produce before the restart: %v", err)
	}
	err = waitUntil(e.ctx, 30*time.Second, func() (bool, error) {
		var err error
		before, err = e.describeGroup(cl, g)
		return err == nil && before.stable(rt.RestartMembers) && count() == parts*rt.RestartBefore, nil
	})
	if err != nil {
		return e.failf("before the restart: the group is %+v with %d of %d records consumed: %v", before, count(), parts*rt.RestartBefore, err)
	}
	for _, m := range members {
		if err := m.CommitUncommittedOffsets(e.ctx); err != nil {
			return e.failf("commit before the restart: %v", err)
		}
	}
	coord := adm.FindGroupCoordinators(e.ctx, g)[g]
	if coord.Err != nil {
		return e.failf("FindCoordinator: %v", coord.Err)
	}
	node := coord.NodeID
	mu.Lock()
	changed := len(changes)
	mu.Unlock()
	restarted, err := e.a.Restart(e.ctx, node)
	if err != nil {
		return e.failf("%v", err)
	}
	if err := produce("after", rt.RestartAfter); err != nil {
		return e.failf("produce after the restart: %v", err)
	}
	total := parts * (rt.RestartBefore + rt.RestartAfter)
	var after groupState
	err = waitUntil(e.ctx, 60*time.Second, func() (bool, error) {
		var err error
		after, err = e.describeGroup(cl, g)
		return err == nil && after.stable(rt.RestartMembers) && count() == total, nil
	})
	data := map[string]any{"before": before, "after": after, "coordinator": node, "restart": restarted}
	if err != nil {
		return rt.Fail(fmt.Sprintf("after restarting node %d: the group is %+v with %d of %d records consumed: %v%s", node, after, count(), total, err, e.ring), data)
	}
	if fmt.Sprint(after) != fmt.Sprint(before) {
		return rt.Fail(fmt.Sprintf("ConsumerGroupDescribe before restarting node %d: %+v, after: %+v", node, before, after), data)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(changes) != changed {
		return rt.Fail(fmt.Sprintf("the members' partitions changed across restarting node %d: %v", node, changes[changed:]), data)
	}
	for v, n := range seen {
		if n != 1 {
			return rt.Fail(fmt.Sprintf("record %s reached the group %d times", v, n), data)
		}
	}
	offs, err := adm.FetchOffsets(e.ctx, g)
	if err == nil {
		err = offs.Error()
	}
	if err != nil {
		return rt.Fail("OffsetFetch after the restart: "+err.Error(), data)
	}
	for p := range parts {
		if o, _ := offs.Lookup(e.a.Topic, int32(p)); o.At < int64(rt.RestartBefore) {
			return rt.Fail(fmt.Sprintf("partition %d: committed offset %d after the restart, want at least %d", p, o.At, rt.RestartBefore), data)
		}
	}
	return rt.Pass(fmt.Sprintf("restarted coordinator node %d: group epoch %d, %d members kept their ids, epochs and partitions, commits kept, %d records each consumed once",
		node, after.Epoch, len(after.Members), total), data)
}

// waitUntil polls cond every 200 ms until it holds, errs or d passes.
func waitUntil(ctx context.Context, d time.Duration, cond func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	for {
		ok, err := cond()
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not within %s", d)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// delegationToken creates a delegation token as the SCRAM user of the
// arguments, logs in with it (SCRAM-SHA-256, tokenauth=true) to produce the
// auth records and consume them back, expires it, and must then be refused
// a login with it within rt.RefusalBound.
func (e *env) delegationToken() rt.Result {
	s := e.a.Security()
	cl, adm := e.admin()
	defer cl.Close()
	tok, err := adm.CreateDelegationToken(e.ctx, kadm.CreateDelegationToken{})
	if err != nil {
		return e.failf("%s: CreateDelegationToken: %v", s, err)
	}
	if tok.Owner.Name != s.Username {
		return e.failf("the token's owner is %s:%s, want User:%s", tok.Owner.Type, tok.Owner.Name, s.Username)
	}
	// Kafka's brokers learn of the token from the metadata log, after
	// the controller answered: its logins work once DescribeDelegationTokens lists it.
	var listed kadm.DelegationTokens
	err = waitUntil(e.ctx, 10*time.Second, func() (bool, error) {
		var err error
		listed, err = adm.DescribeDelegationTokens(e.ctx)
		return slices.ContainsFunc(listed, func(d kadm.DelegationToken) bool { return d.TokenID == tok.TokenID }), err
	})
	if err != nil {
		return e.failf("DescribeDelegationTokens does not list token %s: %+v: %v", tok.TokenID, listed, err)
	}
	tlsCfg, err := s.TLSConfig()
	if err != nil {
		return e.failf("%v", err)
	}
	login := scram.Auth{User: tok.TokenID, Pass: base64.StdEncoding.EncodeToString(tok.HMAC), IsToken: true}.AsSha256Mechanism()
	userSec := e.sec
	e.sec = []kgo.Opt{kgo.DialTLSConfig(tlsCfg), kgo.SASL(login)}
	defer func() { e.sec = userSec }()
	if err := e.produce(nil, rt.AuthRecords()); err != nil {
		return e.failf("produce with the token: %v", err)
	}
	got, err := e.consume(len(rt.AuthRecords()), 0)
	if r := rt.AuthResult(s, err, got); r.Result != "pass" {
		return e.failf("with the token: %s", r.Detail)
	}
	if _, err := adm.ExpireDelegationToken(e.ctx, tok.HMAC, -time.Millisecond); err != nil {
		return e.failf("ExpireDelegationToken: %v", err)
	}
	var last error
	err = waitUntil(e.ctx, rt.RefusalBound, func() (bool, error) {
		tc := e.client(kgo.RequestRetries(0))
		defer tc.Close()
		ctx, cancel := context.WithTimeout(e.ctx, 5*time.Second)
		defer cancel()
		last = tc.Ping(ctx)
		return last != nil, nil
	})
	if err != nil {
		return e.failf("an expired token still logs in: %v", err)
	}
	r := rt.RefusedResult("auth_bad_password", last, false)
	if r.Result != "pass" {
		return r
	}
	return rt.Pass(fmt.Sprintf("a token of User:%s: produced and consumed %d records with it, expired it, then refused: %v", tok.Owner.Name, len(got), last), r.Data)
}
