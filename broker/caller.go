package broker

// The request as the coordinator's caller: the coordinator learns who the
// client is from it, and reports back on it the refusals, findings and
// groups created that the request log, the audit and the group forecast
// record.

import (
	"github.com/vastfake/vastfake/coordinator"
	"github.com/vastfake/vastfake/rules"
)

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
