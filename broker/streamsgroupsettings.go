package broker

import (
	"strconv"
	"strings"
	"time"

	"github.com/strata-io/strata/coordinator"
	"github.com/strata-io/strata/internal/configdef"
	"github.com/strata-io/strata/metadata"
)

// streamsSettings is a streams group's settings as Kafka's GroupConfig
// gives them: its own streams.* group config where set (sessions and
// heartbeats within the broker's group.streams.min/max bounds, standby
// replicas up to group.streams.max.standby.replicas), else the broker's
// group.streams.* config.
func streamsSettings(meta interface{ Image() *metadata.Image }, static map[string]string) func(group string) coordinator.StreamsSettings {
	broker := func(key string) int64 {
		v, ok := static[key]
		if !ok {
			v = configdef.GroupBrokerDefaults[key]
		}
		n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		return n
	}
	return func(group string) coordinator.StreamsSettings {
		set := meta.Image().Configs.Of(groupConfigResource(group))
		get := func(key string, lo, hi int64) int64 {
			n := broker("group.streams." + key)
			if v, ok := set["streams."+key]; ok {
				if m, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
					n = m
				}
			}
			return max(lo, min(n, hi))
		}
		ms := func(n int64) time.Duration { return time.Duration(n) * time.Millisecond }
		return coordinator.StreamsSettings{
			SessionTimeout: ms(get("session.timeout.ms", broker("group.streams.min.session.timeout.ms"),
				broker("group.streams.max.session.timeout.ms"))),
			HeartbeatInterval: ms(get("heartbeat.interval.ms", broker("group.streams.min.heartbeat.interval.ms"),
				broker("group.streams.max.heartbeat.interval.ms"))),
			NumStandbyReplicas:    int(get("num.standby.replicas", 0, broker("group.streams.max.standby.replicas"))),
			AcceptableRecoveryLag: get("acceptable.recovery.lag", 0, 1<<62),
			TaskOffsetInterval:    ms(get("task.offset.interval.ms", broker("group.streams.min.task.offset.interval.ms"), 1<<40)),
		}
	}
}
