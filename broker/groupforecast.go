package broker

// Group forecast: which clients create how many consumer groups, and how
// the groups formed. VAST keeps at most 256 groups per view (rule
// MaxGroups) and never expires their offsets (OffsetsNeverExpire), so an
// app that makes a new group on every run (a CLI consumer with a generated
// group id) works for 256 runs and then fails; on Kafka its groups expire
// and it never does. The audit report carries a line per client, and the
// audit records a MaxGroups finding when one client keeps creating groups
// that are left empty after one run.
//
// VAST's first poll "waits until the group has formed, which takes a few
// seconds" (VAST's Consume events page); vastfake forms a group's first
// generation as soon as its first member joins unless
// -initial-rebalance-delay is set. The report counts, per group, the
// rebalances that came from members joining one by one while it formed,
// which that wait would have folded into its first generation.

import (
	"cmp"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/vastfake/vastfake/coordinator"
	"github.com/vastfake/vastfake/rules"
)

// GroupsCreated is how many consumer groups one client created (with
// JoinGroup or OffsetCommit) and how many of them are empty or gone now.
// The JSON names are the control plane's GET /audit contract.
type GroupsCreated struct {
	ClientID       string `json:"clientId"`
	ClientSoftware string `json:"clientSoftware"`
	ClientVersion  string `json:"clientVersion"`
	Created        int    `json:"created"`
	// Empty counts the groups among the last 64 it created that have no
	// member now, or were deleted.
	Empty int `json:"empty"`
}

// Bounds of the group forecast: clients remembered (further ones are not
// counted), and group names kept per client to check whether they are
// still in use.
const (
	maxForecastClients = 1024
	keptGroupNames     = 64
)

// oneRunGroups is how many groups one client must have created, and left
// empty, before the audit calls it an app that creates a group per run.
const oneRunGroups = 3

type clientGroups struct {
	software, version string
	created           int
	names             []string // the last keptGroupNames created
}

// groupForecast remembers, per client id, the groups it created. The zero
// value is ready to use.
type groupForecast struct {
	mu      sync.Mutex
	clients map[string]*clientGroups
	// since is when the audit was last reset: GroupFormations counts the
	// rebalances that finished after it.
	since time.Time
}

// groupCreated counts group, which r created, for r's client
// (coordinator.Caller's GroupCreated). It is called with the coordinator's
// lock held.
func (b *Broker) groupCreated(r *request, group string) {
	id, sw, v := b.clientOf(r)
	f := &b.forecast
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.clients[id]
	if c == nil {
		if len(f.clients) >= maxForecastClients {
			return
		}
		if f.clients == nil {
			f.clients = make(map[string]*clientGroups)
		}
		c = &clientGroups{}
		f.clients[id] = c
	}
	if sw != "" {
		c.software, c.version = sw, v
	}
	c.created++
	if len(c.names) == keptGroupNames {
		c.names = slices.Delete(c.names, 0, 1)
	}
	c.names = append(c.names, clip(group))
	r.createdGroup = group
}

// emptyGroups counts the groups among names that have no member now or
// are gone, leaving out except.
func (b *Broker) emptyGroups(names []string, except string) int {
	n := 0
	for _, name := range names {
		if name == except {
			continue
		}
		if g, ok := b.coord.Group(name); !ok || len(g.Members) == 0 {
			n++
		}
	}
	return n
}

// checkOneRunGroups records a MaxGroups finding when the client of r,
// which just created a group, created oneRunGroups or more before it that
// are empty now: it looks like an app that makes a group per run, which
// VAST, keeping 256 and never expiring their offsets, refuses after 256
// runs. Call it after the coordinator answered, without its lock.
func (b *Broker) checkOneRunGroups(r *request) {
	if r.createdGroup == "" || b.modes.Of(rules.MaxGroups) != rules.Audit {
		return
	}
	id, _, _ := b.clientOf(r)
	b.forecast.mu.Lock()
	c := b.forecast.clients[id]
	var names []string
	created := 0
	if c != nil {
		names, created = slices.Clone(c.names), c.created
	}
	b.forecast.mu.Unlock()
	if empty := b.emptyGroups(names, r.createdGroup); empty >= oneRunGroups {
		b.vast(r, rules.MaxGroups, rules.Differs, "", r.createdGroup, func() string {
			return "this client has created " + strconv.Itoa(created) + " groups, " + strconv.Itoa(empty) +
				" of them left empty after one run: VAST keeps at most " + strconv.Itoa(b.rules.MaxGroups) +
				" groups per view and never expires their offsets, so an app that creates a group per run fails on VAST once they are used up"
		})
	}
}

// GroupsCreated returns, per client, how many groups it created and how
// many of those are empty now, most first.
func (b *Broker) GroupsCreated() []GroupsCreated {
	type entry struct {
		id string
		c  clientGroups
	}
	b.forecast.mu.Lock()
	entries := make([]entry, 0, len(b.forecast.clients))
	for id, c := range b.forecast.clients {
		e := entry{id: id, c: *c}
		e.c.names = slices.Clone(c.names)
		entries = append(entries, e)
	}
	b.forecast.mu.Unlock()
	out := make([]GroupsCreated, 0, len(entries))
	for _, e := range entries {
		out = append(out, GroupsCreated{ClientID: e.id, ClientSoftware: e.c.software, ClientVersion: e.c.version,
			Created: e.c.created, Empty: b.emptyGroups(e.c.names, "")})
	}
	slices.SortFunc(out, func(a, b GroupsCreated) int {
		return cmp.Or(cmp.Compare(b.Created, a.Created), cmp.Compare(a.ClientID, b.ClientID))
	})
	return out
}

// resetForecast forgets the groups clients created, and the rebalances
// so far.
func (b *Broker) resetForecast() {
	b.forecast.mu.Lock()
	b.forecast.clients = nil
	b.forecast.since = b.clock.Now()
	b.forecast.mu.Unlock()
}

// VASTFirstGenerationWait is how long the forecast takes VAST to wait for a
// new group's members before its first generation: VAST's page says "a few
// seconds"; this is Kafka's default group.initial.rebalance.delay.ms, which
// -initial-rebalance-delay 3s gives vastfake.
const VASTFirstGenerationWait = 3 * time.Second

// GroupFormation is how one group formed, from the coordinator's rebalance
// history (its last 1,000 rebalances) since the audit was last reset. The
// JSON names are the control plane's GET /audit contract.
type GroupFormation struct {
	Group string `json:"group"`
	// Rebalances counts the generations the group completed with members.
	Rebalances int `json:"rebalances"`
	// OneByOne counts those that only added members to the generation
	// before, within VASTFirstGenerationWait of it, while the group was
	// forming (from its first generation, or from Empty): the rebalances
	// of members joining one by one, which VAST's wait would have folded
	// into the first generation.
	OneByOne int `json:"oneByOne"`
	// FirstMembers is how many members the group's first generation had
	// (the largest such count when it formed more than once), and
	// MembersWithWait how many it would have had with VAST's wait.
	FirstMembers    int `json:"firstMembers"`
	MembersWithWait int `json:"membersWithWait"`
}

// GroupFormations returns how each group with a rebalance since the audit
// was last reset formed, most rebalances from members joining one by one
// first. It holds the coordinator's lock only to copy its history.
func (b *Broker) GroupFormations() []GroupFormation {
	b.forecast.mu.Lock()
	since := b.forecast.since
	b.forecast.mu.Unlock()
	return groupFormations(b.coord.Rebalances(), since, VASTFirstGenerationWait)
}

// groupFormations reads history, oldest first, after since: a
// generation whose members include every member of the generation before
// and that finished within wait of it continues the group's forming, as
// Kafka's InitialDelayedJoin extends its delay for each member that
// arrives; any other generation, or Empty, ends it.
func groupFormations(history []coordinator.Rebalance, since time.Time, wait time.Duration) []GroupFormation {
	type forming struct {
		GroupFormation
		last    coordinator.Rebalance
		open    bool // the group is forming: last started or continued it
		members int  // members of the forming generation so far
	}
	byGroup := map[string]*forming{}
	var order []string
	for _, r := range history {
		if !since.IsZero() && !r.Time.After(since) {
			continue
		}
		f := byGroup[r.Group]
		if f == nil {
			// A group seen first at a later generation formed before the
			// audit's reset, or before the history's oldest entry.
			f = &forming{GroupFormation: GroupFormation{Group: r.Group}, open: r.Generation <= 1}
			byGroup[r.Group] = f
			order = append(order, r.Group)
		}
		if len(r.Members) == 0 {
			f.open, f.last = true, coordinator.Rebalance{}
			continue
		}
		f.Rebalances++
		switch {
		case f.last.Members == nil && f.open: // a first generation
			f.members = len(r.Members)
			f.FirstMembers = max(f.FirstMembers, f.members)
			f.MembersWithWait = max(f.MembersWithWait, f.members)
		case f.open && r.Time.Sub(f.last.Time) <= wait && addsMembers(f.last.Members, r.Members):
			f.OneByOne++
			f.members = len(r.Members)
			f.MembersWithWait = max(f.MembersWithWait, f.members)
		default:
			f.open = false
		}
		f.last = r
	}
	out := make([]GroupFormation, 0, len(order))
	for _, g := range order {
		out = append(out, byGroup[g].GroupFormation)
	}
	slices.SortStableFunc(out, func(a, b GroupFormation) int { return cmp.Compare(b.OneByOne, a.OneByOne) })
	return out
}

// addsMembers reports whether next has every member of prev and more.
func addsMembers(prev, next []coordinator.MemberInfo) bool {
	if len(next) <= len(prev) {
		return false
	}
	for _, p := range prev {
		if !slices.ContainsFunc(next, func(n coordinator.MemberInfo) bool { return n.MemberID == p.MemberID }) {
			return false
		}
	}
	return true
}
