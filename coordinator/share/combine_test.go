package share

import (
	"slices"
	"testing"
)

func sb(first, last int64, state RecordState, count int16) StateBatch {
	return StateBatch{First: first, Last: last, State: state, DeliveryCount: count}
}

// TestCombine checks cases of Kafka's PersisterStateBatchCombinerTest:
// pruning at the start offset, same-state merging, and the priority of
// the higher delivery count, then state, where batches overlap.
func TestCombine(t *testing.T) {
	for _, c := range []struct {
		name         string
		soFar, newer []StateBatch
		start        int64
		want         []StateBatch
	}{
		{"current batches with start offset midway are pruned", []StateBatch{sb(100, 130, 0, 1)}, nil, 120, []StateBatch{sb(120, 130, 0, 1)}},
		{"new batches with start offset midway are pruned", nil, []StateBatch{sb(100, 130, 0, 1)}, 120, []StateBatch{sb(120, 130, 0, 1)}},
		{"both empty", nil, nil, 120, nil},
		{"same state, new inside", []StateBatch{sb(100, 110, 0, 1)}, []StateBatch{sb(105, 108, 0, 1)}, -1, []StateBatch{sb(100, 110, 0, 1)}},
		{"same state, contiguous", []StateBatch{sb(100, 110, 0, 1)}, []StateBatch{sb(111, 115, 0, 1)}, -1, []StateBatch{sb(100, 115, 0, 1)}},
		{"overlapping new batches, same state",
			[]StateBatch{sb(100, 110, 0, 1), sb(121, 130, 0, 1)}, []StateBatch{sb(111, 119, 2, 2), sb(116, 123, 2, 2)}, -1,
			[]StateBatch{sb(100, 110, 0, 1), sb(111, 123, 2, 2), sb(124, 130, 0, 1)}},
		{"overlapping new batches, different priority",
			[]StateBatch{sb(100, 110, 0, 1)}, []StateBatch{sb(101, 105, 1, 2), sb(101, 115, 2, 2), sb(101, 120, 3, 2)}, -1,
			[]StateBatch{sb(100, 100, 0, 1), sb(101, 120, 3, 2)}},
		{"overlapping new batches, with pruning",
			[]StateBatch{sb(100, 110, 0, 1), sb(121, 130, 0, 1)}, []StateBatch{sb(111, 119, 2, 2), sb(116, 123, 2, 2)}, 120,
			[]StateBatch{sb(120, 123, 2, 2), sb(124, 130, 0, 1)}},
		{"multiple higher state batch updates",
			[]StateBatch{sb(111, 120, 0, 1)}, []StateBatch{sb(111, 113, 0, 2), sb(114, 114, 2, 1), sb(115, 119, 0, 2)}, -1,
			[]StateBatch{sb(111, 113, 0, 2), sb(114, 114, 2, 1), sb(115, 119, 0, 2), sb(120, 120, 0, 1)}},
		{"higher count wins over the whole batch", []StateBatch{sb(100, 110, 0, 1)}, []StateBatch{sb(100, 110, 0, 2)}, -1, []StateBatch{sb(100, 110, 0, 2)}},
		{"gaps stay", []StateBatch{sb(0, 1, 2, 1)}, []StateBatch{sb(5, 6, 2, 1)}, -1, []StateBatch{sb(0, 1, 2, 1), sb(5, 6, 2, 1)}},
	} {
		if got := Combine(c.soFar, c.newer, c.start); !slices.Equal(got, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}
