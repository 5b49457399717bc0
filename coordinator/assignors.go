package coordinator

// The server-side assignors of KIP-848 consumer groups: range and uniform
// (Kafka's UniformAssignor, homogeneous and general).

import (
	"slices"
	"sort"
)

// assignRange is Kafka's range assignor: per topic, the members subscribed
// to it in member id order each take a contiguous range of its partitions,
// the first ones one more when they do not divide evenly.
func (c *Coordinator) assignRange(members []*cmember, subs [][]string) []tpSet {
	out := make([]tpSet, len(members))
	byTopic := map[string][]int{}
	for i := range members {
		out[i] = tpSet{}
		for _, t := range subs[i] {
			byTopic[t] = append(byTopic[t], i)
		}
	}
	for t, idx := range byTopic {
		n := c.topics[t].Partitions
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

// assignUniformHomogeneous is the uniform assignor when every member
// subscribes to the same topics: each member gets the partition count
// divided evenly (the first ones in member order one more when it does not
// divide), keeping what it had in its last target as far as that allows,
// so a join or a leave moves as few partitions as it can. Each member's
// target is updated in place: only the members that lose or gain
// partitions are touched beyond a look, and the partitions are scanned
// once, without a map: O(members + partitions) with little allocation.
func (c *Coordinator) assignUniformHomogeneous(members []*cmember, topics []string) []tpSet {
	taken := make(map[string][]bool, len(topics))
	total := 0
	for _, t := range topics {
		n := c.topics[t].Partitions
		taken[t] = make([]bool, n)
		total += int(n)
	}
	n := len(members)
	quota, extra := total/n, total%n
	out := make([]tpSet, n)
	// Keep what each member had, up to quota, or quota+1 while extras
	// remain for members that had more; drop the highest partitions of a
	// member over its share.
	for i, m := range members {
		t := m.target
		if t == nil {
			t = tpSet{}
		}
		lastTopic, last := "", []bool(nil) // most targets are of one topic
		for p := range t {
			if p.topic != lastTopic || last == nil {
				lastTopic, last = p.topic, taken[p.topic]
			}
			if p.part >= int32(len(last)) || last[p.part] {
				delete(t, p)
				continue
			}
			last[p.part] = true
		}
		limit := quota
		if len(t) > quota && extra > 0 {
			limit = quota + 1
			extra--
		}
		if len(t) > limit {
			ps := make([]tp, 0, len(t))
			for p := range t {
				ps = append(ps, p)
			}
			sortTPs(ps)
			for _, p := range ps[limit:] {
				delete(t, p)
				taken[p.topic][p.part] = false
			}
		}
		out[i] = t
	}
	// Hand out the rest in topic and partition order: first to members
	// under quota, then one each to members at quota while extras remain.
	i, atQuota := 0, false
	for _, t := range topics {
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
func (c *Coordinator) assignUniformGeneral(members []*cmember, subs [][]string) []tpSet {
	out := make([]tpSet, len(members))
	cands := map[string][]int{}
	for i := range members {
		out[i] = tpSet{}
		for _, t := range subs[i] {
			cands[t] = append(cands[t], i)
		}
	}
	prevOwner := map[tp]int{}
	for i, m := range members {
		for p := range m.target {
			prevOwner[p] = i
		}
	}
	topics := make([]string, 0, len(cands))
	for t := range cands {
		topics = append(topics, t)
	}
	sort.Slice(topics, func(a, b int) bool {
		if len(cands[topics[a]]) != len(cands[topics[b]]) {
			return len(cands[topics[a]]) < len(cands[topics[b]])
		}
		return topics[a] < topics[b]
	})
	for _, t := range topics {
		for p := int32(0); p < c.topics[t].Partitions; p++ {
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
