package coordinator

// The server-side assignors of KIP-848 consumer groups, range and uniform
// (Kafka's RangeAssignor and UniformAssignor), as pure functions: given the
// members, each with the topics it subscribes to and its part of the last
// target assignment, and the topics with their partition counts, they
// return each member's part of the new target assignment. They read
// nothing else and change nothing they are given, so the coordinator's
// state never enters them and tests call them directly.

import (
	"maps"
	"slices"
	"sort"
)

// assignee is one member of a consumer group as an assignor sees it.
type assignee struct {
	// topics are the topics it subscribes to that exist, sorted.
	topics []string
	// current is its part of the last target assignment (nil: none). An
	// assignor never changes it, and may return it as the member's new
	// part when that is the same.
	current tpSet
}

// assignRange is Kafka's range assignor: per topic, the members subscribed
// to it, in the order given (the coordinator's is by member id), each take
// a contiguous range of its partitions, the first ones one more when they
// do not divide evenly. It does not look at what members had: the same
// members and topics always get the same assignment.
func assignRange(members []assignee, topics map[string]TopicMeta) []tpSet {
	out := make([]tpSet, len(members))
	byTopic := map[string][]int{}
	for i := range members {
		out[i] = tpSet{}
		for _, t := range members[i].topics {
			byTopic[t] = append(byTopic[t], i)
		}
	}
	for t, idx := range byTopic {
		n := topics[t].Partitions
		per, extra := n/int32(len(idx)), n%int32(len(idx))
		next := int32(0)
		for k, i := range idx {
			cnt := per
			if int32(k) < extra {
				cnt++
			}
			for p := next; p < next+cnt; p++ {
				out[i][tp{t, p}] = struct{}{}
			}
			next += cnt
		}
	}
	return out
}

// assignUniform is Kafka's uniform assignor: every partition of the topics
// members subscribe to goes to one of its subscribers, as evenly as the
// subscriptions allow, each member keeping what it had as far as that
// allows, so that a join or a leave moves as few partitions as it can.
// When every member subscribes to the same topics it balances exactly
// (assignUniformHomogeneous), otherwise within one partition among the
// members that could take each one (assignUniformGeneral).
func assignUniform(members []assignee, topics map[string]TopicMeta) []tpSet {
	for i := 1; i < len(members); i++ {
		if !slices.Equal(members[i].topics, members[0].topics) {
			return assignUniformGeneral(members, topics)
		}
	}
	if len(members) == 0 {
		return nil
	}
	return assignUniformHomogeneous(members, topics)
}

// assignUniformHomogeneous is the uniform assignor when every member
// subscribes to the same topics (members[0].topics): each member gets the
// partition count divided evenly (the first ones in member order one more
// when it does not divide), keeping what it had as far as that allows. A
// member whose part does not change gets its current set back; only the
// members that lose or gain partitions get a new one. The partitions are
// scanned once, without a map: O(members + partitions) with little
// allocation.
func assignUniformHomogeneous(members []assignee, topics map[string]TopicMeta) []tpSet {
	subscribed := members[0].topics
	taken := make(map[string][]bool, len(subscribed))
	total := 0
	for _, t := range subscribed {
		n := topics[t].Partitions
		taken[t] = make([]bool, n)
		total += int(n)
	}
	n := len(members)
	quota, extra := total/n, total%n
	out := make([]tpSet, n)
	fresh := make([]bool, n) // out[i] is a set of its own, not members[i].current
	// Keep what each member had, up to quota, or quota+1 while extras
	// remain for members that had more: not a partition gone or held by a
	// member before it, nor its highest partitions over its share.
	var kept, dropped []tp
	for i, m := range members {
		kept, dropped = kept[:0], dropped[:0]
		lastTopic, last := "", []bool(nil) // most parts are of one topic
		for p := range m.current {
			if p.topic != lastTopic || last == nil {
				lastTopic, last = p.topic, taken[p.topic]
			}
			if p.part >= int32(len(last)) || last[p.part] {
				dropped = append(dropped, p)
				continue
			}
			last[p.part] = true
			kept = append(kept, p)
		}
		limit := quota
		if len(kept) > quota && extra > 0 {
			limit = quota + 1
			extra--
		}
		if len(kept) > limit {
			sortTPs(kept)
			for _, p := range kept[limit:] {
				taken[p.topic][p.part] = false
			}
			dropped = append(dropped, kept[limit:]...)
			kept = kept[:limit]
		}
		switch {
		case m.current == nil:
			out[i], fresh[i] = tpSet{}, true
		case len(dropped) > 0:
			out[i], fresh[i] = make(tpSet, len(kept)), true
			for _, p := range kept {
				out[i][p] = struct{}{}
			}
		default:
			out[i] = m.current
		}
	}
	// Hand out the rest in topic and partition order: first to members
	// under quota, then one each to members at quota while extras remain.
	i, atQuota := 0, false
	for _, t := range subscribed {
		for p, held := range taken[t] {
			if held {
				continue
			}
			for {
				if i == n {
					i, atQuota = 0, true
				}
				if !atQuota && len(out[i]) < quota || atQuota && extra > 0 && len(out[i]) == quota {
					break
				}
				i++
			}
			if !fresh[i] {
				out[i], fresh[i] = maps.Clone(out[i]), true
			}
			out[i][tp{t, int32(p)}] = struct{}{}
			if atQuota {
				extra--
				i++
			} else if len(out[i]) == quota {
				i++
			}
		}
	}
	return out
}

// sortTPs sorts partitions by topic, then partition.
func sortTPs(ps []tp) {
	sort.Slice(ps, func(a, b int) bool {
		if ps[a].topic != ps[b].topic {
			return ps[a].topic < ps[b].topic
		}
		return ps[a].part < ps[b].part
	})
}

// assignUniformGeneral is the uniform assignor for members subscribed to
// different topics: partitions with the fewest candidates go first, each
// to the candidate holding the fewest, its previous owner when that one
// holds no more than the fewest plus one. Balanced within one partition
// among the members that could take it.
func assignUniformGeneral(members []assignee, topics map[string]TopicMeta) []tpSet {
	out := make([]tpSet, len(members))
	cands := map[string][]int{}
	for i := range members {
		out[i] = tpSet{}
		for _, t := range members[i].topics {
			cands[t] = append(cands[t], i)
		}
	}
	prevOwner := map[tp]int{}
	for i, m := range members {
		for p := range m.current {
			prevOwner[p] = i
		}
	}
	names := make([]string, 0, len(cands))
	for t := range cands {
		names = append(names, t)
	}
	sort.Slice(names, func(a, b int) bool {
		if len(cands[names[a]]) != len(cands[names[b]]) {
			return len(cands[names[a]]) < len(cands[names[b]])
		}
		return names[a] < names[b]
	})
	for _, t := range names {
		for p := int32(0); p < topics[t].Partitions; p++ {
			k := tp{t, p}
			best := -1
			for _, i := range cands[t] {
				if best < 0 || len(out[i]) < len(out[best]) {
					best = i
				}
			}
			if prev, ok := prevOwner[k]; ok && slices.Contains(cands[t], prev) && len(out[prev]) <= len(out[best]) {
				best = prev
			}
			out[best][k] = struct{}{}
		}
	}
	return out
}
