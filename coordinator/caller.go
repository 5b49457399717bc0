package coordinator

import (
	"slices"
	"strings"

	"github.com/vastfake/vastfake/rules"
)

// Caller is the client a request to the coordinator comes from, and where
// the coordinator reports what it did because of that request. The broker's
// per-request type implements it and passes it to every entry point whose
// work depends on the client (JoinGroup, OffsetCommit,
// ConsumerGroupHeartbeat); a new entry point that names, refuses, audits
// or creates takes one too. The entry points that block (JoinGroup,
// SyncGroup) also take the connection's context, for its cancellation
// only. Work that no client asked for (a timer expiring offsets,
// completing a rebalance) uses a caller of the coordinator's own naming
// the group's clients, whose findings go to Config.Audit; a call with no
// client at all passes NoCaller. A Caller is never nil.
type Caller interface {
	// Client returns the client id of the request's header and the host
	// the client connects from, as Kafka shows it ("/10.0.0.7"); either
	// may be empty. New members carry both: a member id reads
	// clientID-uuid, and DescribeGroups shows ClientID and ClientHost.
	Client() (id, host string)
	// Refused is told that a VAST rule refused the request, with a
	// sentence saying why. It is called once per refusal, in the entry
	// point's goroutine before it returns, without the coordinator's lock:
	// it may call Groups, Group or CommittedOffset.
	Refused(rule rules.ID, reason string)
	// Finding is told that the request broke audited rule rule (see
	// rules.Audit): VAST would have refused it (kind rules.Refused) or
	// behaved otherwise (rules.Differs), about group, as detail says. It
	// is called with the coordinator's lock held and must not call back
	// into the Coordinator.
	Finding(rule rules.ID, kind rules.Kind, group, detail string)
	// GroupCreated is told that the request created group (JoinGroup,
	// OffsetCommit or ConsumerGroupHeartbeat), so that the broker can say
	// which clients create how many groups. It is called with the
	// coordinator's lock held and must not call back into the Coordinator.
	GroupCreated(group string)
}

// NoCaller is the Caller of a request no client sent: it names no client,
// and what it is told (refusals, findings, groups created) is dropped, save
// that a refusal is logged at Info by the coordinator's logger.
var NoCaller Caller = noCaller{}

type noCaller struct{}

func (noCaller) Client() (id, host string)                    { return "", "" }
func (noCaller) Refused(rules.ID, string)                     {}
func (noCaller) Finding(rules.ID, rules.Kind, string, string) {}
func (noCaller) GroupCreated(string)                          {}

// groupClients is the Caller of the coordinator's own work on a group (its
// timers: offsets expiring, a rebalance completing): no request caused it,
// so a finding about the group as a whole names the group's clients and
// goes to Config.Audit.
type groupClients struct {
	c   *Coordinator
	ids string
}

// clientsOf returns the caller of the coordinator's own work on g, naming
// the client ids of g's members (comma-separated, in join order, each
// once), or else the client that last committed its offsets.
func (c *Coordinator) clientsOf(g *group) Caller {
	var ids []string
	for _, m := range g.ordered() {
		if !slices.Contains(ids, m.clientID) {
			ids = append(ids, m.clientID)
		}
	}
	if len(ids) == 0 && g.committedBy != "" {
		ids = append(ids, g.committedBy)
	}
	return groupClients{c: c, ids: strings.Join(ids, ", ")}
}

func (g groupClients) Client() (id, host string) { return g.ids, "" }
func (g groupClients) Refused(rules.ID, string)  {}
func (g groupClients) GroupCreated(string)       {}
func (g groupClients) Finding(rule rules.ID, kind rules.Kind, group, detail string) {
	if g.c.audit != nil {
		g.c.audit(g.ids, rule, kind, group, detail)
	}
}

// deferredCaller holds the refusals of a call's locked part for its caller
// until the coordinator's lock is released (deferRefusals).
type deferredCaller struct {
	Caller
	queued []refusal // appended under c.mu
}

type refusal struct {
	rule   rules.ID
	reason string
}

func (d *deferredCaller) Refused(rule rules.ID, reason string) {
	d.queued = append(d.queued, refusal{rule, reason})
}

// deferRefusals returns a caller that collects refusals, and a flush that
// hands what was collected to caller. A call passes the returned caller to
// its locked part and runs flush after releasing c.mu, so that a caller
// that calls back into the Coordinator (Groups, Group, CommittedOffset)
// does not deadlock. NoCaller is returned as it is.
func deferRefusals(caller Caller) (Caller, func()) {
	if caller == NoCaller {
		return caller, func() {}
	}
	d := &deferredCaller{Caller: caller}
	return d, func() {
		for _, q := range d.queued {
			caller.Refused(q.rule, q.reason)
		}
	}
}
