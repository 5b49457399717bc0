package coordinator

import (
	"cmp"
	"slices"
	"strings"
)

// partSet is a set of partitions, each once, sorted by topic and partition,
// in three flat arrays: a topic costs its name's header and an end index,
// a partition 4 bytes, about what AddPartitionsToTxn sends for each (a Go
// map of TopicPartition cost some 100 bytes a partition, 28 times the
// bytes sent). The zero value is empty.
type partSet struct {
	topics []string
	ends   []int32 // topics[i]'s partitions are parts[ends[i-1]:ends[i]]
	parts  []int32
}

func (s *partSet) len() int { return len(s.parts) }

// of returns the range of parts that holds topics[i]'s partitions.
func (s *partSet) of(i int) (lo, hi int) {
	if i > 0 {
		lo = int(s.ends[i-1])
	}
	return lo, int(s.ends[i])
}

// has reports whether p is in s.
func (s *partSet) has(p TopicPartition) bool {
	i, ok := slices.BinarySearch(s.topics, p.Topic)
	if !ok {
		return false
	}
	lo, hi := s.of(i)
	_, ok = slices.BinarySearch(s.parts[lo:hi], p.Partition)
	return ok
}

// all returns s's partitions in order.
func (s *partSet) all() []TopicPartition {
	out := make([]TopicPartition, 0, len(s.parts))
	for i, topic := range s.topics {
		lo, hi := s.of(i)
		for _, p := range s.parts[lo:hi] {
			out = append(out, TopicPartition{topic, p})
		}
	}
	return out
}

func compareTP(a, b TopicPartition) int {
	if c := strings.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	return cmp.Compare(a.Partition, b.Partition)
}

// insertMax is the most partitions add inserts one at a time (a move of
// the arrays' tails each, no allocation); more are merged into new arrays.
const insertMax = 16

// add adds partitions to s. Partitions that sort after all of s's are
// appended in place, a few others inserted in place, more merged into new
// arrays of the exact size: a client adding its partitions one request at
// a time costs a move of the arrays' tails per partition.
func (s *partSet) add(add []TopicPartition) {
	add = slices.Clone(add)
	slices.SortFunc(add, compareTP)
	add = slices.Compact(add)
	add = slices.DeleteFunc(add, s.has)
	if len(add) == 0 {
		return
	}
	if n := len(s.topics); n == 0 || compareTP(TopicPartition{s.topics[n-1], s.parts[len(s.parts)-1]}, add[0]) < 0 {
		for _, p := range add {
			s.push(p)
		}
		return
	}
	if len(add) <= insertMax {
		for _, p := range add {
			s.insert(p)
		}
		return
	}
	var out partSet
	out.topics = make([]string, 0, len(s.topics)+len(add))
	out.ends = make([]int32, 0, len(s.topics)+len(add))
	out.parts = make([]int32, 0, len(s.parts)+len(add))
	ti, pi, j := 0, 0, 0
	for pi < len(s.parts) || j < len(add) {
		for ti < len(s.topics) && int(s.ends[ti]) <= pi {
			ti++
		}
		if j == len(add) || pi < len(s.parts) && compareTP(TopicPartition{s.topics[ti], s.parts[pi]}, add[j]) < 0 {
			out.push(TopicPartition{s.topics[ti], s.parts[pi]})
			pi++
		} else {
			out.push(add[j])
			j++
		}
	}
	out.topics, out.ends = slices.Clip(out.topics), slices.Clip(out.ends)
	*s = out
}

// push appends p, which sorts after every partition of s.
func (s *partSet) push(p TopicPartition) {
	if n := len(s.topics); n == 0 || s.topics[n-1] != p.Topic {
		s.topics = append(s.topics, p.Topic)
		s.ends = append(s.ends, int32(len(s.parts)))
	}
	s.parts = append(s.parts, p.Partition)
	s.ends[len(s.ends)-1] = int32(len(s.parts))
}

// insert adds p, which s does not hold, in its place.
func (s *partSet) insert(p TopicPartition) {
	i, ok := slices.BinarySearch(s.topics, p.Topic)
	if !ok {
		start := int32(0)
		if i > 0 {
			start = s.ends[i-1]
		}
		s.topics = slices.Insert(s.topics, i, p.Topic)
		s.ends = slices.Insert(s.ends, i, start)
	}
	lo, hi := s.of(i)
	at, _ := slices.BinarySearch(s.parts[lo:hi], p.Partition)
	s.parts = slices.Insert(s.parts, lo+at, p.Partition)
	for k := i; k < len(s.ends); k++ {
		s.ends[k]++
	}
}

// dropTopic removes topic's partitions from s.
func (s *partSet) dropTopic(topic string) {
	i, ok := slices.BinarySearch(s.topics, topic)
	if !ok {
		return
	}
	lo, hi := s.of(i)
	s.parts = slices.Delete(s.parts, lo, hi)
	s.topics = slices.Delete(s.topics, i, i+1)
	s.ends = slices.Delete(s.ends, i, i+1)
	for k := i; k < len(s.ends); k++ {
		s.ends[k] -= int32(hi - lo)
	}
}
