package broker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/vastfake/vastfake/coordinator"
)

// TestGroupFormations reads rebalance histories as the report does: only
// generations that add members within the wait of the one before, while
// the group forms (from generation 1 or from Empty), count as joining one
// by one.
func TestGroupFormations(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	members := func(ids ...string) []coordinator.MemberInfo {
		out := make([]coordinator.MemberInfo, len(ids))
		for i, id := range ids {
			out[i] = coordinator.MemberInfo{MemberID: id}
		}
		return out
	}
	gen := func(group string, generation int32, at time.Duration, ids ...string) coordinator.Rebalance {
		state := "Stable"
		if len(ids) == 0 {
			state = "Empty"
		}
		return coordinator.Rebalance{Time: t0.Add(at), Group: group, Generation: generation, State: state, Members: members(ids...)}
	}
	for _, c := range []struct {
		name    string
		history []coordinator.Rebalance
		want    GroupFormation
	}{
		{"three one by one", []coordinator.Rebalance{gen("g", 1, 0, "a"), gen("g", 2, time.Second, "a", "b"), gen("g", 3, 3*time.Second, "a", "b", "c")},
			GroupFormation{Group: "g", Rebalances: 3, OneByOne: 2, FirstMembers: 1, MembersWithWait: 3}},
		{"after the wait", []coordinator.Rebalance{gen("g", 1, 0, "a"), gen("g", 2, 4*time.Second, "a", "b")},
			GroupFormation{Group: "g", Rebalances: 2, FirstMembers: 1, MembersWithWait: 1}},
		{"a member replaced", []coordinator.Rebalance{gen("g", 1, 0, "a"), gen("g", 2, time.Second, "b", "c")},
			GroupFormation{Group: "g", Rebalances: 2, FirstMembers: 1, MembersWithWait: 1}},
		{"formed, then a join much later ends the forming", []coordinator.Rebalance{gen("g", 1, 0, "a"), gen("g", 2, time.Minute, "a", "b"),
			gen("g", 3, time.Minute+time.Second, "a", "b", "c")},
			GroupFormation{Group: "g", Rebalances: 3, FirstMembers: 1, MembersWithWait: 1}},
		{"forms again from Empty", []coordinator.Rebalance{gen("g", 1, 0, "a", "b"), gen("g", 2, time.Minute), gen("g", 3, 2*time.Minute, "c"),
			gen("g", 4, 2*time.Minute+time.Second, "c", "d"), gen("g", 5, 2*time.Minute+2*time.Second, "c", "d", "e")},
			GroupFormation{Group: "g", Rebalances: 4, OneByOne: 2, FirstMembers: 2, MembersWithWait: 3}},
		{"first seen at a later generation", []coordinator.Rebalance{gen("g", 7, 0, "a"), gen("g", 8, time.Second, "a", "b")},
			GroupFormation{Group: "g", Rebalances: 2}},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, []GroupFormation{c.want}, groupFormations(c.history, time.Time{}, VASTFirstGenerationWait))
		})
	}
}
