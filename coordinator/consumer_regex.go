package coordinator

import (
	"errors"
	"math"
	"regexp"
	"regexp/syntax"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
)

// Regex subscriptions (ConsumerGroupHeartbeat v1 SubscribedTopicRegex) as
// Kafka 4.4's GroupMetadataManager resolves them: the coordinator, not the
// member, turns a regex into topics, asynchronously, and keeps the answer
// per group as a ConsumerGroupRegularExpression record (the topics, the
// metadata version and the time of the resolution).
//
//   - A regex is RE2 (Kafka compiles it with com.google.re2j; Go's regexp is
//     RE2 too) and must match the whole topic name (re2j's
//     matcher(topic).matches()). Every topic counts, the internal ones
//     (__consumer_offsets, __transaction_state) included, as Kafka's
//     TopicRegexResolver scans every name of the metadata image.
//   - A regex no member used before is checked on the heartbeat that brings
//     it (INVALID_REGULAR_EXPRESSION, Kafka's message) and resolved after
//     the answer: the member first gets what its other subscriptions give,
//     and the resolution bumps the group epoch when it changed the group's
//     topics, so the next heartbeats get the new target.
//   - Kafka's refresh rules (maybeUpdateRegularExpressions): a heartbeat
//     starts a refresh of all the group's regexes when none is running, the
//     last one is more than 10 s old, and a regex is unresolved, a topic was
//     created since the last one, or group.consumer.regex.refresh.interval.ms
//     passed. A deleted topic leaves the assignment on the next heartbeat,
//     through the group's MetadataHash, and the regex's record at the next
//     refresh.
//   - A regex's record is deleted when its last member leaves it.
//
//   - As Kafka's filterTopicDescribeAuthorizedTopics, a resolution drops the
//     topics the member whose heartbeat started it may not DESCRIBE
//     (Client.CanDescribe).

// regexBatchRefreshMinInterval is Kafka's REGEX_BATCH_REFRESH_MIN_INTERVAL_MS.
const regexBatchRefreshMinInterval = 10 * time.Second

// resolvedRegex is what a regex resolved to (ConsumerGroupRegularExpressionValue).
type resolvedRegex struct {
	topics             []string // sorted
	version, timestamp int64
}

// topicsSeen is when the shard first saw each topic, in unix ms, the
// version Kafka's metadata image has for the coordinator: a regex resolved
// at an older version than the newest topic is resolved again.
type topicsSeen struct {
	at        map[[16]byte]int64
	newest    int64
	scannedAt int64 // unix ms of the last look at the topics
}

// topicsRescanInterval bounds how often heartbeats look for new topics:
// Kafka learns of them from the metadata image's deltas, Strata by looking,
// at most once a second per shard rather than on every heartbeat.
const topicsRescanInterval = time.Second

// newestTopicVersion is the version of the newest topic, looking at the
// topics again unless it did less than topicsRescanInterval ago.
func (s *groupShard) newestTopicVersion() int64 {
	if s.now.UnixMilli()-s.regexTopics.scannedAt < topicsRescanInterval.Milliseconds() && s.regexTopics.at != nil {
		return s.regexTopics.newest
	}
	return s.observeTopics(s.topics.Topics())
}

// observe notes the topics that exist now and returns the newest version.
func (s *groupShard) observeTopics(topics []topicMeta) int64 {
	ts := &s.regexTopics
	now := s.now.UnixMilli()
	ts.scannedAt = now
	at := make(map[[16]byte]int64, len(topics))
	for _, t := range topics {
		v, ok := ts.at[t.id]
		if !ok {
			v = now
			ts.newest = max(ts.newest, now)
		}
		at[t.id] = v
	}
	ts.at = at
	return ts.newest
}

// compileRegex is a regex as Kafka matches it, against the whole name.
func compileRegex(regex string) (*regexp.Regexp, error) {
	if err := checkRE2J(regex); err != nil {
		return nil, err
	}
	return regexp.Compile(`\A(?:` + regex + `)\z`)
}

// checkRE2J is Kafka's Utils.throwIfRegularExpressionIsInvalid: the error
// re2j's Pattern.compile gives, in its words (PatternSyntaxException's
// description), where they differ from Go's: an unmatched ')' is re2j's
// internal error, and a capture group name used twice is refused.
func checkRE2J(regex string) error {
	re, err := syntax.Parse(regex, syntax.Perl)
	var se *syntax.Error
	switch {
	case errors.As(err, &se) && se.Code == syntax.ErrUnexpectedParen:
		return errors.New("regexp/syntax: internal error")
	case errors.As(err, &se):
		return errors.New(string(se.Code))
	case err != nil:
		return err
	}
	names := re.CapNames()
	seen := map[string]bool{}
	for _, n := range names {
		if n != "" && seen[n] {
			return errors.New("duplicate capture group name")
		}
		seen[n] = true
	}
	return nil
}

// regexError is the answer to a heartbeat whose regex does not compile,
// Kafka's InvalidRegularExpression; nil when it does.
func regexError(regex string) *kmsg.ConsumerGroupHeartbeatResponse {
	if err := checkRE2J(regex); err != nil {
		return heartbeatError(kerr.InvalidRegularExpression, "SubscribedTopicRegex `"+regex+"` is not a valid regular expression: "+err.Error()+".")
	}
	return nil
}

// otherRegexSubscribers is how many members but m subscribe to regex.
func (cg *consumerGroup) otherRegexSubscribers(regex string, m *cmember) int {
	n := 0
	for _, o := range cg.members {
		if o != m && o.regex == regex {
			n++
		}
	}
	return n
}

// subscribedRegexes is the regexes the group's members subscribe to.
func (cg *consumerGroup) subscribedRegexes() map[string]int {
	subs := map[string]int{}
	for _, m := range cg.members {
		if m.regex != "" {
			subs[m.regex]++
		}
	}
	return subs
}

// subscribes reports whether m subscribes to topic name, by name or
// through its regex as last resolved.
func (cg *consumerGroup) subscribes(m *cmember, name string) bool {
	if _, ok := slices.BinarySearch(m.topics, name); ok {
		return true
	}
	if m.regex == "" {
		return false
	}
	_, ok := slices.BinarySearch(cg.resolved[m.regex].topics, name)
	return ok
}

// pruneRegexes forgets the resolutions of the regexes no member uses any
// more (their records are tombstoned by the next write).
func (cg *consumerGroup) pruneRegexes() {
	subs := cg.subscribedRegexes()
	for regex := range cg.resolved {
		if subs[regex] == 0 {
			delete(cg.resolved, regex)
		}
	}
}

// lastRegexRefresh is Kafka's lastResolvedRegularExpressionRefreshTimeMs and
// lastResolvedRegularExpressionVersion: of one resolution (all are made
// together); math.MinInt64 and 0 when there is none.
func (cg *consumerGroup) lastRegexRefresh() (timestamp, version int64) {
	timestamp = math.MinInt64
	for _, r := range cg.resolved {
		return r.timestamp, r.version
	}
	return timestamp, 0
}

// maybeUpdateRegexes is Kafka's maybeUpdateRegularExpressions, after m's
// heartbeat moved it from regex old to m.regex: it starts a refresh when
// Kafka would and reports whether the group epoch must be bumped (m left
// a regex, or took one already resolved).
func (s *groupShard) maybeUpdateRegexes(g *group, m *cmember, old string, client Client) bool {
	cg := g.consumer
	bump, refresh := false, false
	if old != m.regex {
		switch {
		case m.regex == "":
			bump = old != ""
		case cg.otherRegexSubscribers(m.regex, m) == 0:
			refresh = true
		case cg.hasResolved(m.regex):
			bump = true
		}
		cg.pruneRegexes()
	}
	subs := cg.subscribedRegexes()
	key := timerKey{kind: timerConsumerRegex, group: g.id}
	if len(subs) == 0 || s.timers.armed(key) {
		return bump
	}
	now := s.now.UnixMilli()
	last, version := cg.lastRegexRefresh()
	if now <= last+regexBatchRefreshMinInterval.Milliseconds() {
		return bump
	}
	refresh = refresh || len(subs) != len(cg.resolved) || now > last+s.regexRefreshInterval().Milliseconds() ||
		version < s.newestTopicVersion()
	if refresh {
		cg.regexAuth = client.CanDescribe
		s.schedule(key, 0)
	}
	return bump
}

func (s *groupShard) regexRefreshInterval() time.Duration {
	if s.cfg.ConsumerRegexRefreshInterval > 0 {
		return s.cfg.ConsumerRegexRefreshInterval
	}
	return 10 * time.Minute
}

func (cg *consumerGroup) setResolved(regex string, r resolvedRegex) {
	if cg.resolved == nil {
		cg.resolved = map[string]resolvedRegex{}
	}
	cg.resolved[regex] = r
}

func (cg *consumerGroup) hasResolved(regex string) bool {
	_, ok := cg.resolved[regex]
	return ok
}

// refreshRegexes resolves the group's regexes against the topics now
// (Kafka's TopicRegexResolver, then handleRegularExpressionsResult): each
// gets a new record, and when the group's topics or their metadata changed
// the group epoch is bumped.
func (s *groupShard) refreshRegexes(g *group) {
	cg := g.consumer
	if cg == nil {
		return
	}
	subs := cg.subscribedRegexes()
	if len(subs) == 0 {
		return
	}
	topics := s.topics.Topics()
	version := s.observeTopics(topics)
	now := s.now.UnixMilli()
	changed := false
	for regex := range subs {
		matched := []string{}
		re, err := compileRegex(regex)
		if err != nil { // validated when it came; as Kafka, it resolves to nothing
			s.logger.Error("ignoring a regular expression that does not compile", zap.String("group", g.id),
				zap.String("regex", regex), zap.Error(err))
		}
		for _, t := range topics {
			if re != nil && re.MatchString(t.name) && (cg.regexAuth == nil || cg.regexAuth(t.name)) {
				matched = append(matched, t.name)
			}
		}
		slices.Sort(matched)
		if !slices.Equal(cg.resolved[regex].topics, matched) {
			changed = true
		}
		cg.setResolved(regex, resolvedRegex{topics: matched, version: version, timestamp: now})
	}
	if h := s.subscriptionHash(cg); h != cg.metadataHash {
		cg.metadataHash, changed = h, true
	}
	s.logger.Info("refreshed consumer group regular expressions", zap.String("group", g.id), zap.Int("regexes", len(subs)),
		zap.Int("topics", len(topics)), zap.Bool("changed", changed))
	if changed {
		cg.epoch++
		s.logger.Info("bumped consumer group epoch after resolving its regular expressions", zap.String("group", g.id),
			zap.Int32("epoch", cg.epoch))
	}
	s.persistConsumer(g, func(error) {})
}
