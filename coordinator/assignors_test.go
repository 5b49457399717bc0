package coordinator

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// parts builds a set of partitions from "topic/partition" pairs, as
// parts("a", 0, 1, "b", 2) = {a/0, a/1, b/2}: a name starts a topic, the
// numbers after it are its partitions.
func parts(spec ...any) tpSet {
	s := tpSet{}
	topic := ""
	for _, x := range spec {
		switch x := x.(type) {
		case string:
			topic = x
		case int:
			s[tp{topic, int32(x)}] = struct{}{}
		}
	}
	return s
}

// topicCounts builds the topics an assignor sees from name, count pairs.
func topicCounts(spec ...any) map[string]TopicMeta {
	out := map[string]TopicMeta{}
	for i := 0; i < len(spec); i += 2 {
		name := spec[i].(string)
		out[name] = TopicMeta{Name: name, Partitions: int32(spec[i+1].(int))}
	}
	return out
}

// sub is a member subscribed to topics, holding current.
func sub(current tpSet, topics ...string) assignee {
	return assignee{topics: topics, current: current}
}

type assignCase struct {
	name    string
	members []assignee
	topics  map[string]TopicMeta
	want    []tpSet
}

// runAssign runs assign over the cases: it must return want, and leave
// every member's current set as it was.
func runAssign(t *testing.T, assign func([]assignee, map[string]TopicMeta) []tpSet, cases []assignCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := make([]tpSet, len(c.members))
			for i, m := range c.members {
				before[i] = maps.Clone(m.current)
			}
			got := assign(c.members, c.topics)
			require.Len(t, got, len(c.want))
			for i := range c.want {
				assert.Equal(t, c.want[i], got[i], "member %d", i)
				assert.Equal(t, before[i], c.members[i].current, "member %d's current set is not changed", i)
			}
		})
	}
}

// TestAssignRange: range gives each topic's subscribers, in member order, a
// contiguous range of its partitions, the first ones one more; the same
// members and topics always get the same assignment, whatever they had.
func TestAssignRange(t *testing.T) {
	t.Parallel()
	runAssign(t, assignRange, []assignCase{{
		name:    "even split",
		members: []assignee{sub(nil, "t"), sub(nil, "t")},
		topics:  topicCounts("t", 4),
		want:    []tpSet{parts("t", 0, 1), parts("t", 2, 3)},
	}, {
		name:    "the first members take one more (balance)",
		members: []assignee{sub(nil, "t"), sub(nil, "t"), sub(nil, "t")},
		topics:  topicCounts("t", 5),
		want:    []tpSet{parts("t", 0, 1), parts("t", 2, 3), parts("t", 4)},
	}, {
		name:    "each topic among its own subscribers",
		members: []assignee{sub(nil, "a", "b"), sub(nil, "b")},
		topics:  topicCounts("a", 2, "b", 3),
		want:    []tpSet{parts("a", 0, 1, "b", 0, 1), parts("b", 2)},
	}, {
		name:    "more members than partitions",
		members: []assignee{sub(nil, "t"), sub(nil, "t"), sub(nil, "t")},
		topics:  topicCounts("t", 2),
		want:    []tpSet{parts("t", 0), parts("t", 1), parts()},
	}, {
		name:    "nothing changed: each keeps what it had (stickiness)",
		members: []assignee{sub(parts("t", 0, 1), "t"), sub(parts("t", 2, 3), "t")},
		topics:  topicCounts("t", 4),
		want:    []tpSet{parts("t", 0, 1), parts("t", 2, 3)},
	}, {
		name:    "what members had does not count",
		members: []assignee{sub(parts("t", 3), "t"), sub(parts("t", 0), "t")},
		topics:  topicCounts("t", 4),
		want:    []tpSet{parts("t", 0, 1), parts("t", 2, 3)},
	}, {
		name:    "a topic that does not exist has no partitions",
		members: []assignee{sub(nil, "gone", "t")},
		topics:  topicCounts("t", 1),
		want:    []tpSet{parts("t", 0)},
	}, {
		name:    "no members",
		members: []assignee{},
		topics:  topicCounts("t", 1),
		want:    []tpSet{},
	}})
}

// TestAssignUniformHomogeneous: with every member on the same topics,
// uniform splits the partitions evenly (the first members one more), each
// member keeping what it had up to its share, so that a join takes only
// what balance needs and a leave moves only the leaver's partitions.
func TestAssignUniformHomogeneous(t *testing.T) {
	t.Parallel()
	runAssign(t, assignUniform, []assignCase{{
		name:    "even split from nothing",
		members: []assignee{sub(nil, "t"), sub(nil, "t"), sub(nil, "t")},
		topics:  topicCounts("t", 6),
		want:    []tpSet{parts("t", 0, 1), parts("t", 2, 3), parts("t", 4, 5)},
	}, {
		name:    "the first members take the extra partitions (balance)",
		members: []assignee{sub(nil, "t"), sub(nil, "t"), sub(nil, "t")},
		topics:  topicCounts("t", 7),
		want:    []tpSet{parts("t", 0, 1, 6), parts("t", 2, 3), parts("t", 4, 5)},
	}, {
		name:    "across topics",
		members: []assignee{sub(nil, "a", "b"), sub(nil, "a", "b")},
		topics:  topicCounts("a", 3, "b", 1),
		want:    []tpSet{parts("a", 0, 1), parts("a", 2, "b", 0)},
	}, {
		name:    "nothing changed: each keeps what it had (stickiness)",
		members: []assignee{sub(parts("t", 0, 5), "t"), sub(parts("t", 1, 4), "t"), sub(parts("t", 2, 3), "t")},
		topics:  topicCounts("t", 6),
		want:    []tpSet{parts("t", 0, 5), parts("t", 1, 4), parts("t", 2, 3)},
	}, {
		name:    "a member joins: the others give up their highest partitions, no more",
		members: []assignee{sub(parts("t", 0, 1, 2), "t"), sub(parts("t", 3, 4, 5), "t"), sub(nil, "t")},
		topics:  topicCounts("t", 6),
		want:    []tpSet{parts("t", 0, 1), parts("t", 3, 4), parts("t", 2, 5)},
	}, {
		name:    "a member left: only its partitions move",
		members: []assignee{sub(parts("t", 0, 1), "t"), sub(parts("t", 2, 3), "t")},
		topics:  topicCounts("t", 6),
		want:    []tpSet{parts("t", 0, 1, 4), parts("t", 2, 3, 5)},
	}, {
		name:    "a member over its share keeps one extra while extras remain",
		members: []assignee{sub(parts("t", 0, 1, 2, 3), "t"), sub(nil, "t")},
		topics:  topicCounts("t", 5),
		want:    []tpSet{parts("t", 0, 1, 2), parts("t", 3, 4)},
	}, {
		name:    "partitions gone or of another topic are dropped",
		members: []assignee{sub(parts("t", 0, 7, "gone", 0), "t"), sub(parts("t", 1), "t")},
		topics:  topicCounts("t", 2),
		want:    []tpSet{parts("t", 0), parts("t", 1)},
	}, {
		name:    "a partition two members claim stays with the first",
		members: []assignee{sub(parts("t", 0), "t"), sub(parts("t", 0), "t")},
		topics:  topicCounts("t", 2),
		want:    []tpSet{parts("t", 0), parts("t", 1)},
	}})
}

// TestAssignUniformGeneral: with members on different topics, every
// partition goes to one of its topic's subscribers, the topics with the
// fewest candidates first, each partition to the candidate holding the
// fewest, or to its previous owner when that one holds no more.
func TestAssignUniformGeneral(t *testing.T) {
	t.Parallel()
	runAssign(t, assignUniform, []assignCase{{
		name:    "disjoint subscriptions",
		members: []assignee{sub(nil, "a"), sub(nil, "b")},
		topics:  topicCounts("a", 2, "b", 3),
		want:    []tpSet{parts("a", 0, 1), parts("b", 0, 1, 2)},
	}, {
		name:    "overlapping subscriptions balance among the candidates (balance)",
		members: []assignee{sub(nil, "a", "b"), sub(nil, "b")},
		topics:  topicCounts("a", 2, "b", 2),
		want:    []tpSet{parts("a", 0, 1), parts("b", 0, 1)},
	}, {
		name:    "a topic's partitions alternate among equal candidates (balance)",
		members: []assignee{sub(nil, "a", "b"), sub(nil, "b", "c")},
		topics:  topicCounts("b", 4),
		want:    []tpSet{parts("b", 0, 2), parts("b", 1, 3)},
	}, {
		name:    "nothing changed: each keeps what it had (stickiness)",
		members: []assignee{sub(parts("b", 1, 3), "a", "b"), sub(parts("b", 0, 2), "b", "c")},
		topics:  topicCounts("b", 4),
		want:    []tpSet{parts("b", 1, 3), parts("b", 0, 2)},
	}, {
		name: "a member joins: the others keep what balance lets them (stickiness)",
		members: []assignee{sub(parts("b", 0, 1, 2, 3), "a", "b"), sub(parts("c", 0, 1), "b", "c"),
			sub(nil, "b")},
		topics: topicCounts("b", 4, "c", 2),
		want:   []tpSet{parts("b", 0, 2), parts("c", 0, 1), parts("b", 1, 3)},
	}})
}

// TestUniformProperties checks, over random groups, what uniform promises
// whatever the shape: every partition of a subscribed topic goes to
// exactly one of its subscribers; with every member on the same topics
// the counts differ by at most one; and an unchanged group keeps its
// assignment (each member gets its own set back), a member leaving moves
// only its partitions, a member joining takes only from the others.
func TestUniformProperties(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(38, 3))
	for iter := range 2000 {
		topics := map[string]TopicMeta{}
		var names []string
		for i := range 1 + r.IntN(4) {
			n := fmt.Sprintf("t%d", i)
			names = append(names, n)
			topics[n] = TopicMeta{Name: n, Partitions: int32(r.IntN(16))}
		}
		homogeneous := iter%2 == 0
		members := make([]assignee, 1+r.IntN(6))
		for i := range members {
			for _, n := range names {
				if (homogeneous && n != names[len(names)-1]) || (!homogeneous && r.IntN(2) == 0) {
					members[i].topics = append(members[i].topics, n)
				}
			}
		}
		if homogeneous {
			for i := range members {
				members[i].topics = members[0].topics
			}
		}
		where := fmt.Sprintf("case %d (seed 38, 3)", iter)
		out := assignUniform(members, topics)
		checkCovers(t, members, topics, out, where)
		if homogeneous {
			checkBalanced(t, out, where)
		}

		// Unchanged: the same sets come back.
		for i := range members {
			members[i].current = out[i]
		}
		again := assignUniform(members, topics)
		for i := range members {
			require.Equal(t, out[i], again[i], where)
			if homogeneous {
				require.Equal(t, reflect.ValueOf(out[i]).UnsafePointer(), reflect.ValueOf(again[i]).UnsafePointer(), "%s: member %d gets its own set back", where, i)
			}
		}
		if !homogeneous || len(members) < 2 {
			continue
		}
		// A member leaves: the others keep all they had.
		left := slices.Delete(slices.Clone(members), 0, 1)
		after := assignUniform(left, topics)
		checkCovers(t, left, topics, after, where)
		checkBalanced(t, after, where)
		for i := range left {
			for p := range left[i].current {
				if _, kept := after[i][p]; !kept {
					t.Fatalf("%s: a leave moved %v from member %d", where, p, i)
				}
			}
		}
		// A member joins: the others keep a part of what they had.
		joined := append(slices.Clone(members), assignee{topics: members[0].topics})
		after = assignUniform(joined, topics)
		checkCovers(t, joined, topics, after, where)
		checkBalanced(t, after, where)
		for i := range members {
			for p := range after[i] {
				if _, had := members[i].current[p]; !had {
					t.Fatalf("%s: a join gave member %d %v", where, i, p)
				}
			}
		}
	}
}

// checkCovers checks that out gives every partition of a topic some member
// subscribes to to exactly one of its subscribers, and nothing else.
func checkCovers(t *testing.T, members []assignee, topics map[string]TopicMeta, out []tpSet, where string) {
	t.Helper()
	require.Len(t, out, len(members), where)
	owner := map[tp]int{}
	for i, s := range out {
		for p := range s {
			if !slices.Contains(members[i].topics, p.topic) || p.part >= topics[p.topic].Partitions {
				t.Fatalf("%s: %v to member %d, not subscribed or past the topic's end", where, p, i)
			}
			if _, twice := owner[p]; twice {
				t.Fatalf("%s: %v assigned twice", where, p)
			}
			owner[p] = i
		}
	}
	for _, m := range members {
		for _, name := range m.topics {
			for p := range topics[name].Partitions {
				if _, ok := owner[tp{name, p}]; !ok {
					t.Fatalf("%s: %s/%d unassigned", where, name, p)
				}
			}
		}
	}
}

// checkBalanced checks that the members' counts differ by at most one.
func checkBalanced(t *testing.T, out []tpSet, where string) {
	t.Helper()
	lo, hi := -1, 0
	for _, s := range out {
		if lo < 0 || len(s) < lo {
			lo = len(s)
		}
		hi = max(hi, len(s))
	}
	require.LessOrEqual(t, hi-lo, 1, "%s: counts %d to %d", where, lo, hi)
}
