package broker

// The request: one decoded request as a handler sees it, what handlers
// note on it for the request log (refusals, denials, findings), and the
// request as the coordinator's caller, through which the coordinator
// learns who the client is and reports back the refusals, findings and
// groups created that the request log, the audit and the group forecast
// record.

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/vastfake/vastfake/coordinator"
	"github.com/vastfake/vastfake/log"
	"github.com/vastfake/vastfake/rules"
)

// request is one decoded request as a handler sees it. It is also the
// coordinator's Caller (below).
type request struct {
	ctx      context.Context
	b        *Broker
	conn     *clientConn
	version  int16
	clientID string
	kreq     kmsg.Request
	rule     string // the VAST rule that refused (part of) the request first
	finding  string // the audited VAST rule of the first finding the request caused
	// rules and findings list every rule that refused part of the
	// request, and every audited rule it broke, when there is more than
	// one; nil otherwise, so that a request breaking one rule allocates
	// nothing.
	rules, findings []string
	why             string // what the refusal told the client, when its answer has no message field

	user       string // the authenticated user, or "" (SaslAuthenticate: the user it names)
	denied     string // why a policy (or failed authentication) denied (part of) the request
	closeAfter string // when set, the connection closes after the answer, for this reason

	reads []log.ReadResult // log reads the answer aliases, released once it is written

	createdGroup string // the group the request created (JoinGroup, OffsetCommit), for the group forecast
	refusedAbout string // the topic (or group) of the first refusal, for the server log
	// refusedFindings are the findings of kind refused the request caused
	// (audit), so that an error its answer carries is counted as theirs.
	refusedFindings []findingRef
}

// releaseReads ends the log reads the request's answer aliased; the answer
// must be written (encoded) by then.
func (r *request) releaseReads() {
	for i := range r.reads {
		r.reads[i].Release()
	}
	r.reads = nil
}

// principal is the name policies match for this request's user.
func (r *request) principal() string {
	if r.user == "" {
		return anonymous
	}
	return r.user
}

// deny records why a policy denied this request, for the request log.
func (r *request) deny(why string) {
	if r.denied == "" {
		r.denied = why
	}
}

// refuse records that a VAST rule refused this request, for the request log.
func (r *request) refuse(rule string) {
	r.rule, r.rules = addRule(r.rule, r.rules, rule)
}

// addRule adds rule to a request's first rule and list of all, and
// returns them: the list is made only when a second rule comes.
func addRule(first string, all []string, rule string) (string, []string) {
	switch {
	case first == "":
		return rule, nil
	case first == rule || slices.Contains(all, rule):
		return first, all
	case all == nil:
		return first, []string{first, rule}
	}
	return first, append(all, rule)
}

// refuseBecause is refuse with the reason, for answers that carry no error
// message of their own (JoinGroup, OffsetCommit): the request log and the
// log line show it instead.
func (r *request) refuseBecause(rule, why string) {
	if r.rule == "" {
		r.why = why
	}
	r.rule, r.rules = addRule(r.rule, r.rules, rule)
}

var _ coordinator.Caller = (*request)(nil)

// Client returns the request's client id and the host it connects from,
// as Kafka shows it in DescribeGroups ("/10.0.0.7").
func (r *request) Client() (id, host string) {
	if r.conn != nil {
		host = r.conn.remoteHost()
	}
	return r.clientID, host
}

// Refused records on r that rule refused it, and why: the request log and
// the log line show the reason, as JoinGroup and OffsetCommit answers carry
// no message.
func (r *request) Refused(rule rules.ID, reason string) {
	r.refuseBecause(rule.String(), reason)
}

// Finding records a finding of audited rule rule about group that the
// request caused, naming its client and API.
func (r *request) Finding(rule rules.ID, kind rules.Kind, group, detail string) {
	r.b.recordFinding(r, rule, kind, "", group, func() string { return detail })
}

// GroupCreated counts group for the request's client in the group
// forecast, and notes it on r for checkOneRunGroups.
func (r *request) GroupCreated(group string) {
	r.b.groupCreated(r, group)
}
