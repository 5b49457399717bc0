package coordinator

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPartSetIsASet: adds in any order and of any size (appended, inserted
// one at a time, merged), repeats and topic drops leave a partSet holding
// what a map would, sorted.
func TestPartSetIsASet(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	topics := []string{"a", "b", "c", "d", "e"}
	for range 200 {
		var s partSet
		want := map[TopicPartition]bool{}
		for range 20 {
			if rng.IntN(10) == 0 {
				topic := topics[rng.IntN(len(topics))]
				s.dropTopic(topic)
				for p := range want {
					if p.Topic == topic {
						delete(want, p)
					}
				}
				continue
			}
			var add []TopicPartition
			for range rng.IntN(3 * insertMax) {
				add = append(add, TopicPartition{topics[rng.IntN(len(topics))], rng.Int32N(40)})
			}
			s.add(add)
			for _, p := range add {
				want[p] = true
			}
		}
		var exp []TopicPartition
		for p := range want {
			exp = append(exp, p)
		}
		slices.SortFunc(exp, compareTP)
		got := s.all()
		if len(exp) == 0 {
			require.Empty(t, got)
		} else {
			require.Equal(t, exp, got)
		}
		require.Equal(t, len(exp), s.len())
		for _, topic := range topics {
			for p := range int32(40) {
				require.Equal(t, want[TopicPartition{topic, p}], s.has(TopicPartition{topic, p}))
			}
		}
	}
}
