package broker

import (
	"runtime"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

type fuzzPart struct {
	id    int32
	value int
}

type fuzzTopicEntry struct {
	name  string
	parts []fuzzPart
}

// FuzzMergeTopics checks the helpers every handler uses for repeated names
// on any list of topics and partitions: each topic and each of its
// partitions comes out once, at its first place, holding the last copy
// (lastOfEach) or the first (firstOfEach), and the input is not changed.
func FuzzMergeTopics(f *testing.F) {
	f.Add([]byte{0, 1, 0, 2, 1, 1, 0, 1})
	f.Add([]byte{3, 3, 3, 3, 3, 3, 3, 3, 3, 3})
	f.Add(make([]byte, 64))
	f.Fuzz(func(t *testing.T, data []byte) {
		// Each byte pair is one partition entry: topic (of 4) and
		// partition (of 8); a topic entry starts when the topic changes.
		var topics []fuzzTopicEntry
		for i := 0; i+1 < len(data); i += 2 {
			name := string(rune('a' + data[i]%4))
			p := fuzzPart{id: int32(data[i+1] % 8), value: i}
			if len(topics) == 0 || topics[len(topics)-1].name != name || data[i]&0x80 != 0 {
				topics = append(topics, fuzzTopicEntry{name: name})
			}
			topics[len(topics)-1].parts = append(topics[len(topics)-1].parts, p)
		}
		var before []fuzzTopicEntry
		for _, tp := range topics {
			before = append(before, fuzzTopicEntry{tp.name, slices.Clone(tp.parts)})
		}
		for _, last := range []bool{true, false} {
			pick := firstOfEach[fuzzPart, int32]
			if last {
				pick = lastOfEach[fuzzPart, int32]
			}
			out := mergeTopics(topics,
				func(t *fuzzTopicEntry) string { return t.name },
				func(t *fuzzTopicEntry) *[]fuzzPart { return &t.parts },
				func(p *fuzzPart) int32 { return p.id }, pick)
			require.Equal(t, before, topics, "the input is not changed")

			// The expected answer, computed the slow way.
			var order []string
			var partOrder = map[string][]int32{}
			want := map[string]map[int32]int{}
			for _, tp := range topics {
				if want[tp.name] == nil {
					want[tp.name] = map[int32]int{}
					order = append(order, tp.name)
				}
				for _, p := range tp.parts {
					if _, seen := want[tp.name][p.id]; !seen {
						partOrder[tp.name] = append(partOrder[tp.name], p.id)
						want[tp.name][p.id] = p.value
					} else if last {
						want[tp.name][p.id] = p.value
					}
				}
			}
			require.Len(t, out, len(order))
			for i, tp := range out {
				require.Equal(t, order[i], tp.name)
				require.Len(t, tp.parts, len(partOrder[tp.name]))
				for j, p := range tp.parts {
					require.Equal(t, partOrder[tp.name][j], p.id)
					require.Equal(t, want[tp.name][p.id], p.value)
				}
			}
		}
	})
}

// TestRepeatsCostTheirDistinctKeys: merging a request that names a few
// partitions a million times allocates for the few, not for the copies, so
// a large request of repeats costs no second copy of itself.
func TestRepeatsCostTheirDistinctKeys(t *testing.T) {
	parts := make([]fuzzPart, 1_000_000)
	for i := range parts {
		parts[i] = fuzzPart{id: int32(i % 10), value: i}
	}
	topics := []fuzzTopicEntry{{name: "t", parts: parts}}
	var out []fuzzTopicEntry
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	out = mergeTopics(topics, func(e *fuzzTopicEntry) string { return e.name },
		func(e *fuzzTopicEntry) *[]fuzzPart { return &e.parts },
		func(p *fuzzPart) int32 { return p.id }, lastOfEach)
	runtime.ReadMemStats(&after)
	require.Len(t, out, 1)
	require.Len(t, out[0].parts, 10)
	require.Equal(t, fuzzPart{id: 3, value: 999_993}, out[0].parts[3], "the last copy")
	require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(256<<10), "bytes allocated for 10 partitions named 100,000 times each")
}
