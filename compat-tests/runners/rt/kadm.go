package rt

import (
	"context"

	"github.com/twmb/franz-go/pkg/kadm"
)

// WaitReadyKadm is WaitReady through franz-go's admin client: Metadata for
// the leaders, ListOffsets for the leaders' answer. The franz-go runner and
// the harness's pre-create both use it.
func WaitReadyKadm(ctx context.Context, adm *kadm.Client, topic string, n int) error {
	return WaitReady(ctx, topic, n, func(ctx context.Context) (TopicMeta, error) {
		m, err := adm.Metadata(ctx, topic)
		if err != nil {
			return TopicMeta{}, err
		}
		t := m.Topics[topic]
		if t.Err != nil {
			return TopicMeta{}, t.Err
		}
		tm := TopicMeta{Brokers: m.Brokers.NodeIDs(), Leaders: make([]int32, len(t.Partitions))}
		for i, p := range t.Partitions.Sorted() {
			tm.Leaders[i] = p.Leader
			if p.Err != nil {
				tm.Leaders[i] = -1
			}
		}
		return tm, nil
	}, func(ctx context.Context) error {
		lo, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			return err
		}
		return lo.Error()
	})
}
