package broker

// The audit report's errors answered without a rule: failures no VAST rule
// names, told apart from the routine steps of the protocol every client
// handles, and from answers whose cause is already a finding.

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ErrorCount is how often one client got one error from one API about one
// topic or group where no VAST rule was the cause: a topic that does not
// exist, a version the broker does not serve, a request Kafka would refuse
// too. The audit report lists them, so that an app that fails for a reason
// no rule names never gets a clean-looking report. The JSON names are the
// control plane's GET /audit contract.
type ErrorCount struct {
	// API is the request's name, "ListOffsets"; Error the error's name,
	// "UNSUPPORTED_VERSION", and Code its number.
	API   string `json:"api"`
	Error string `json:"error"`
	Code  int16  `json:"code"`
	// ClientID, ClientSoftware and ClientVersion are as in Finding.
	ClientID       string `json:"clientId"`
	ClientSoftware string `json:"clientSoftware"`
	ClientVersion  string `json:"clientVersion"`
	// Topic and Group name what the first answer's error was about, when
	// it names one: the topic of the partition that carried it, the group
	// of a group request.
	Topic string `json:"topic"`
	Group string `json:"group"`
	// Retriable reports whether clients retry the error on their own
	// (kerr's retriable errors: NOT_COORDINATOR, LEADER_NOT_AVAILABLE...),
	// so that it shows a passing state rather than a failure.
	Retriable bool `json:"retriable"`
	// Routine reports a step of the protocol every client takes in its
	// stride (a rebalance in progress, a member id required, a coordinator
	// or leader moving): counted apart, never a sign that an app fails.
	Routine bool `json:"routine"`
	// Finding names the rule of the finding that already explains the
	// answer (the request broke that rule, and VAST would have refused
	// it): the report counts it there and points to it.
	Finding string `json:"finding,omitempty"`
	// Count is how many answers carried it; First and Last when, on the
	// broker's clock.
	Count int64     `json:"count"`
	First time.Time `json:"first"`
	Last  time.Time `json:"last"`
	// Detail is the first answer's message and version, "ListOffsets v0
	// is older than ...".
	Detail string `json:"detail"`
	// Advice says what the error means for the app and what to change.
	Advice string `json:"advice"`
}

// maxErrorCounts bounds the distinct (API, error, client, topic or group)
// rows kept; further distinct ones are counted in AuditReport.ErrorsDropped.
const maxErrorCounts = 1000

type errorKey struct {
	api                        int16
	code                       int16
	clientID, software, swVers string
	topic, group               string
	finding                    string
}

// answerError is one error an answer carried that no enforced rule caused:
// its code, what it was about, and the finding (a rule's name) that
// already explains it, if one does.
type answerError struct {
	api, code    int16
	topic, group string
	finding      string
}

// recordError counts one answer carrying error e to a request that no
// rule refused. r names the client (nil: none); detail describes the first
// occurrence and advice says what to do (empty: the error's description).
func (b *Broker) recordError(r *request, e answerError, detail func() string, advice func() string) {
	k := errorKey{api: e.api, code: e.code, topic: clip(e.topic), group: clip(e.group), finding: e.finding}
	if r != nil {
		k.clientID, k.software, k.swVers = b.clientOf(r)
	}
	now := b.clock.Now()
	a := &b.audit
	a.mu.Lock()
	defer a.mu.Unlock()
	if c := a.errByKey[k]; c != nil {
		c.Count++
		c.Last = now
		return
	}
	if len(a.errOrder) >= maxErrorCounts {
		a.errDropped++
		return
	}
	if a.errByKey == nil {
		a.errByKey = make(map[errorKey]*ErrorCount)
	}
	c := &ErrorCount{API: kmsg.NameForKey(e.api), Code: e.code, ClientID: k.clientID, ClientSoftware: k.software,
		ClientVersion: k.swVers, Topic: k.topic, Group: k.group, Routine: routineError(e.api, e.code), Finding: e.finding,
		Count: 1, First: now, Last: now, Detail: logMessage(detail())}
	if ke, ok := kerr.ErrorForCode(e.code).(*kerr.Error); ok {
		c.Error, c.Retriable = ke.Message, ke.Retriable
		c.Advice = ke.Description
	}
	if advice != nil {
		if s := advice(); s != "" {
			c.Advice = s
		}
	}
	a.errByKey[k] = c
	a.errOrder = append(a.errOrder, c)
}

// routineError reports whether an error answered to api is a step of the
// protocol that every client takes and recovers from on its own, rather
// than a failure:
//   - group membership: KIP-394's MEMBER_ID_REQUIRED (join again with the
//     id it carries), REBALANCE_IN_PROGRESS (join again), and
//     ILLEGAL_GENERATION answered to a heartbeat (the group moved on; the
//     member joins again); to an OffsetCommit it is not routine, as that
//     commit is lost;
//   - a coordinator or partition leader moving or loading:
//     NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE,
//     COORDINATOR_LOAD_IN_PROGRESS, NOT_LEADER_OR_FOLLOWER,
//     LEADER_NOT_AVAILABLE, OFFSET_NOT_AVAILABLE (the client asks
//     Metadata or FindCoordinator again);
//   - a fetch session the broker let go (FETCH_SESSION_ID_NOT_FOUND,
//     INVALID_FETCH_SESSION_EPOCH: the client starts a new one);
//   - a transaction still finishing (CONCURRENT_TRANSACTIONS,
//     UNSTABLE_OFFSET_COMMIT: the client retries).
func routineError(api, code int16) bool {
	switch code {
	case kerr.MemberIDRequired.Code, kerr.RebalanceInProgress.Code,
		kerr.NotCoordinator.Code, kerr.CoordinatorNotAvailable.Code, kerr.CoordinatorLoadInProgress.Code,
		kerr.NotLeaderForPartition.Code, kerr.LeaderNotAvailable.Code, kerr.OffsetNotAvailable.Code,
		kerr.FetchSessionIDNotFound.Code, kerr.InvalidFetchSessionEpoch.Code,
		kerr.ConcurrentTransactions.Code, kerr.UnstableOffsetCommit.Code:
		return true
	case kerr.IllegalGeneration.Code:
		return api == int16(kmsg.Heartbeat)
	}
	return false
}

// errorAdvice is the advice for an error answered without a rule, or ""
// for the error's own description; denied is why the request was denied,
// if it was.
func errorAdvice(key, code int16, denied string) string {
	switch code {
	case kerr.SaslAuthenticationFailed.Code:
		if denied != "" {
			return "the login failed: " + denied
		}
	case kerr.UnknownTopicOrPartition.Code:
		if key == int16(kmsg.Produce) || key == int16(kmsg.Fetch) || key == int16(kmsg.Metadata) || key == int16(kmsg.ListOffsets) {
			return "the topic or partition does not exist: create the topic first (VAST never creates one on first use)"
		}
	case kerr.TopicAuthorizationFailed.Code, kerr.GroupAuthorizationFailed.Code, kerr.ClusterAuthorizationFailed.Code,
		kerr.TransactionalIDAuthorizationFailed.Code:
		return "an identity policy denies it: grant the user the permission (GET /denials names it)"
	}
	return ""
}

// Errors returns the errors answered without a rule, in the order first
// seen.
func (b *Broker) Errors() []ErrorCount {
	b.audit.mu.Lock()
	defer b.audit.mu.Unlock()
	out := make([]ErrorCount, len(b.audit.errOrder))
	for i, e := range b.audit.errOrder {
		out[i] = *e
	}
	return out
}

// answerErrorOf returns the first error of a request's answer with what it
// is about: the topic of the element that carried it (by name, or by ID
// for Produce and Fetch v13+), and the group the answer or the request
// names; and the finding of kind refused the request caused about that
// topic or group, if any.
func (b *Broker) answerErrorOf(r *request, resp kmsg.Response, code int16) answerError {
	e := answerError{api: r.kreq.Key(), code: code}
	if resp != nil {
		_, e.topic, e.group = b.firstErrorSubject(reflect.ValueOf(resp).Elem(), 0, "", "")
	}
	if e.group == "" {
		if gs := groupsOf(reflect.ValueOf(r.kreq).Elem()); len(gs) == 1 {
			e.group = gs[0]
		}
	}
	if routineError(e.api, code) {
		return e // a step of the protocol, whatever else the request broke
	}
	for _, f := range r.refusedFindings {
		if (f.topic == "" || e.topic == "" || f.topic == e.topic) && (f.group == "" || e.group == "" || f.group == e.group) {
			e.finding = f.rule
			break
		}
	}
	return e
}

// firstErrorSubject walks a response depth first as firstError does, and
// returns whether it found an error with the topic and group of the
// elements enclosing it (topic and group are those of the enclosing
// elements walked so far).
func (b *Broker) firstErrorSubject(v reflect.Value, depth int, topic, group string) (bool, string, string) {
	if depth > 4 {
		return false, "", ""
	}
	switch v.Kind() {
	case reflect.Struct:
		if name := b.topicNameOf(v); name != "" {
			topic = name
		}
		if g, ok := stringField(v, "Group"); ok && g != "" {
			group = g
		}
		p := errorPlanFor(v.Type())
		if p.errorCode >= 0 && v.Field(p.errorCode).Int() != 0 {
			return true, topic, group
		}
		for _, i := range p.structSlices {
			if ok, t, g := b.firstErrorSubject(v.Field(i), depth+1, topic, group); ok {
				return true, t, g
			}
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			if ok, t, g := b.firstErrorSubject(v.Index(i), depth+1, topic, group); ok {
				return true, t, g
			}
		}
	}
	return false, "", ""
}

// findingRef is a finding of kind refused a request caused: VAST would
// have refused it, so an error its answer carries about the same topic or
// group is that finding's, not a failure of its own.
type findingRef struct {
	rule         string
	topic, group string
}

// subject describes what an error was about: "orders", "group billing",
// or both; "" for neither.
func (e *ErrorCount) subject() string {
	switch {
	case e.Topic != "" && e.Group != "":
		return e.Topic + ", group " + e.Group
	case e.Group != "":
		return "group " + e.Group
	}
	return e.Topic
}

// markdownErrors writes the section of errors answered without a rule,
// when there are any, in three parts: failures (with the line that says
// one is likely why an app fails only when one is not retriable), routine
// protocol steps, and errors a finding already explains.
func (a AuditReport) markdownErrors(sb *strings.Builder) {
	if len(a.Errors) == 0 && a.ErrorsDropped == 0 {
		return
	}
	var failures, routine, explained []ErrorCount
	var nFail, nRetriable, nRoutine, nExplained int64
	for _, e := range a.Errors {
		switch {
		case e.Finding != "":
			explained, nExplained = append(explained, e), nExplained+e.Count
		case e.Routine:
			routine, nRoutine = append(routine, e), nRoutine+e.Count
		default:
			failures, nFail = append(failures, e), nFail+e.Count
			if e.Retriable {
				nRetriable += e.Count
			}
		}
	}
	sb.WriteString("\n## Errors answered without a rule\n\n")
	if a.ErrorsDropped > 0 {
		fmt.Fprintf(sb, "%s not kept (the broker keeps %d).\n\n", count(int(a.ErrorsDropped), "more distinct error"), maxErrorCounts)
	}
	if len(failures) > 0 {
		fmt.Fprintf(sb, "%s carried an error that no VAST rule caused; the app meets these on VAST too. ", count(int(nFail), "answer"))
		switch {
		case nRetriable == nFail:
			sb.WriteString("All of them are retriable: clients retry them on their own, so they show a passing state rather than a failure.\n\n")
		case nRetriable == 0:
			sb.WriteString("None is retriable: each is likely why an app fails.\n\n")
		default:
			fmt.Fprintf(sb, "%d of them are retriable, which clients retry on their own; one that is not is likely why an app fails.\n\n", nRetriable)
		}
		sb.WriteString("| API | error | client | topic or group | count | first answer | advice |\n| --- | --- | --- | --- | --- | --- | --- |\n")
		for _, e := range failures {
			name := e.Error
			if e.Retriable {
				name += " (retriable)"
			}
			fmt.Fprintf(sb, "| %s | %s | %s | %s | %d | %s | %s |\n", mdCell(e.API), mdCell(name), mdCell(clientLabel(e.ClientSoftware, e.ClientVersion, e.ClientID)),
				mdCell(e.subject()), e.Count, mdCell(e.Detail), mdCell(e.Advice))
		}
	}
	if len(explained) > 0 {
		if len(failures) > 0 {
			sb.WriteString("\n")
		}
		fmt.Fprintf(sb, "%s carried an error whose cause is a finding above, counted there rather than here:\n\n", count(int(nExplained), "answer"))
		sb.WriteString("| API | error | client | topic or group | count | see finding |\n| --- | --- | --- | --- | --- | --- |\n")
		for _, e := range explained {
			fmt.Fprintf(sb, "| %s | %s | %s | %s | %d | %s |\n", mdCell(e.API), mdCell(e.Error), mdCell(clientLabel(e.ClientSoftware, e.ClientVersion, e.ClientID)),
				mdCell(e.subject()), e.Count, mdCell(e.Finding))
		}
	}
	if len(routine) > 0 {
		if len(failures)+len(explained) > 0 {
			sb.WriteString("\n")
		}
		were := "were"
		if nRoutine == 1 {
			were = "was"
		}
		fmt.Fprintf(sb, "%s %s routine: steps of the protocol every client takes and recovers from on its own (a rebalance in progress, a member id required, a coordinator or leader moving), not failures:\n\n", count(int(nRoutine), "answer"), were)
		sb.WriteString("| API | error | client | topic or group | count |\n| --- | --- | --- | --- | --- |\n")
		for _, e := range routine {
			fmt.Fprintf(sb, "| %s | %s | %s | %s | %d |\n", mdCell(e.API), mdCell(e.Error), mdCell(clientLabel(e.ClientSoftware, e.ClientVersion, e.ClientID)),
				mdCell(e.subject()), e.Count)
		}
	}
}
