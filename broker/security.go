package broker

// Security: SASL authentication (SaslHandshake, SaslAuthenticate and the
// raw token frames of a v0 handshake; PLAIN here, SCRAM in scram.go) and VAST identity-policy
// authorization, which every handler consults for what it touches.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/vastfake/vastfake/rules"
)

// mechanismPlain is the one SASL mechanism VAST offers (VAST's Consume events page and management API).
const mechanismPlain = "PLAIN"

// maxSASLFrameSize caps a frame from a client that has not authenticated
// yet, as Kafka's sasl.server.max.receive.size (512 KiB) does: a larger one
// closes the connection before the broker allocates it.
const maxSASLFrameSize = 512 << 10

// maxSASLTokenSize caps a SASL token (PLAIN's authorization id, user name
// and password; a SCRAM client message): a longer one fails authentication before it is parsed, so a
// client cannot make the broker split, compare and log a name of hundreds
// of kilobytes. Kafka has no such cap below sasl.server.max.receive.size.
const maxSASLTokenSize = 8 << 10

// anonymous is the principal of a connection that did not authenticate (a
// listener with no users), as Kafka names it; policies may name it.
const anonymous = "ANONYMOUS"

// DefaultView is the view name in resource names unless WithView sets
// another.
const DefaultView = "vastfake"

// Action is an identity-policy action on a Kafka resource, named as VAST
// names it.
type Action string

// The actions VAST's identity policies grant on Kafka resources, from VAST's
// page on granting Kafka permissions in an identity policy.
const (
	KafkaRead            Action = "KafkaRead"
	KafkaWrite           Action = "KafkaWrite"
	KafkaCreate          Action = "KafkaCreate"
	KafkaDelete          Action = "KafkaDelete"
	KafkaDescribe        Action = "KafkaDescribe"
	KafkaAlterConfigs    Action = "KafkaAlterConfigs"
	KafkaDescribeConfigs Action = "KafkaDescribeConfigs"
)

var actions = []Action{KafkaRead, KafkaWrite, KafkaCreate, KafkaDelete, KafkaDescribe, KafkaAlterConfigs, KafkaDescribeConfigs}

// Effect says whether a policy allows or denies.
type Effect string

// The two effects of a policy. Deny beats allow.
const (
	EffectAllow Effect = "allow"
	EffectDeny  Effect = "deny"
)

// Policy is one identity-policy statement: it allows or denies User the
// Action on Resource.
//
// User is a user name, "ANONYMOUS" for connections on a listener without
// users, or "*" for everyone. Resource is a VAST resource name: a topic
// "vast:kafka:topic:<view>:<topic>", a group "vast:kafka:group:<view>:<group>"
// or the view "vast:kafka:view:<view>". User, Action and Resource may end in
// "*", which matches any rest ("vast:kafka:topic:vastfake:orders-*",
// "Kafka*", "*").
//
// As in Kafka's ACLs, allowing KafkaRead, KafkaWrite, KafkaDelete or
// KafkaAlterConfigs on a resource also allows KafkaDescribe on it, and
// allowing KafkaAlterConfigs also allows KafkaDescribeConfigs; so a
// consumer group needs only KafkaRead on its topic and its group (VAST's Consume events page).
// A deny statement denies only the action it names.
//
// Metadata v8+ reports what the policies allow as Kafka's authorized
// operations (KIP-430): on a topic READ, WRITE, DELETE, DESCRIBE,
// DESCRIBE_CONFIGS and ALTER_CONFIGS are the actions of the same name, and
// CREATE and ALTER (adding partitions) are KafkaCreate on the topic or the
// view; on the cluster (v8-v10) the actions on the view.
type Policy struct {
	Effect   Effect
	User     string
	Action   Action
	Resource string
}

// Allow returns a policy allowing user action on resource.
func Allow(user string, action Action, resource string) Policy {
	return Policy{Effect: EffectAllow, User: user, Action: action, Resource: resource}
}

// Deny returns a policy denying user action on resource.
func Deny(user string, action Action, resource string) Policy {
	return Policy{Effect: EffectDeny, User: user, Action: action, Resource: resource}
}

// String formats p as ParsePolicy reads it: "deny alice KafkaRead
// vast:kafka:topic:vastfake:orders".
func (p Policy) String() string {
	return fmt.Sprintf("%s %s %s %s", p.Effect, p.User, p.Action, p.Resource)
}

// ParsePolicy reads a policy written as four words: effect (allow or deny),
// user, action and resource, e.g. "allow billing KafkaRead
// vast:kafka:group:vastfake:billing". Its error is a *PolicyError.
func ParsePolicy(s string) (Policy, error) {
	f := strings.Fields(s)
	if len(f) != 4 {
		return Policy{}, &PolicyError{Policy: s, Problem: fmt.Sprintf("four words, not %d", len(f))}
	}
	p := Policy{Effect: Effect(strings.ToLower(f[0])), User: f[1], Action: Action(f[2]), Resource: f[3]}
	return p, p.validate()
}

// A PolicyError says what is wrong with a policy: Problem says what it
// wants, quoting at most a short prefix of the policy's words.
type PolicyError struct {
	Policy  string
	Problem string
}

func (e *PolicyError) Error() string {
	return fmt.Sprintf("policy %q: want \"allow|deny user action resource\", and %s", clip(e.Policy), e.Problem)
}

func (p Policy) validate() error {
	fail := func(format string, a ...any) error {
		return &PolicyError{Policy: p.String(), Problem: fmt.Sprintf(format, a...)}
	}
	if p.Effect != EffectAllow && p.Effect != EffectDeny {
		return fail("an effect of allow or deny, not %q", clipShort(string(p.Effect)))
	}
	if p.User == "" {
		return fail("a user (* for everyone)")
	}
	known := false
	for _, a := range actions {
		known = known || patternCouldMatch(string(p.Action), string(a))
	}
	if !known {
		return fail("an action of %v, not %q", actions, clipShort(string(p.Action)))
	}
	if !patternCouldMatch(p.Resource, "vast:kafka:topic:") && !patternCouldMatch(p.Resource, "vast:kafka:group:") &&
		!patternCouldMatch(p.Resource, "vast:kafka:view:") {
		return fail("a resource vast:kafka:topic:<view>:<topic>, vast:kafka:group:<view>:<group> or vast:kafka:view:<view>, not %q", clipShort(p.Resource))
	}
	return nil
}

// clipShort is s, or its first 40 bytes and an ellipsis: what an error
// quotes of a word it names.
func clipShort(s string) string {
	if len(s) <= 40 {
		return s
	}
	return runePrefix(s, 40) + "…"
}

// patternCouldMatch reports whether pattern could match a name beginning
// with (or equal to) known.
func patternCouldMatch(pattern, known string) bool {
	if prefix, ok := strings.CutSuffix(pattern, "*"); ok {
		return strings.HasPrefix(prefix, known) || strings.HasPrefix(known, prefix)
	}
	return pattern == known || strings.HasPrefix(pattern, known)
}

// match reports whether name matches pattern: equal, or with the part
// before a trailing "*" as its prefix.
func match(pattern, name string) bool {
	if prefix, ok := strings.CutSuffix(pattern, "*"); ok {
		return strings.HasPrefix(name, prefix)
	}
	return pattern == name
}

// implies reports whether allowing granted also allows wanted.
func implies(granted, wanted Action) bool {
	switch wanted {
	case KafkaDescribe:
		return granted == KafkaRead || granted == KafkaWrite || granted == KafkaDelete || granted == KafkaAlterConfigs
	case KafkaDescribeConfigs:
		return granted == KafkaAlterConfigs
	}
	return false
}

// TopicResource returns the VAST resource name of a topic in a view.
func TopicResource(view, topic string) string { return "vast:kafka:topic:" + view + ":" + topic }

// GroupResource returns the VAST resource name of a consumer group in a view.
func GroupResource(view, group string) string { return "vast:kafka:group:" + view + ":" + group }

// ViewResource returns the VAST resource name of a view.
func ViewResource(view string) string { return "vast:kafka:view:" + view }

// authorizer decides requests by the broker's policies.
type authorizer struct {
	policies    []Policy
	defaultDeny bool
}

// active reports whether any request could be denied.
func (a *authorizer) active() bool { return len(a.policies) > 0 || a.defaultDeny }

// decide reports whether user may do action on at least one of resources:
// any matching deny statement denies; otherwise a matching allow
// statement, or no matching statement at all unless defaultDeny, allows.
// When it denies, it says which statement (or the default) did.
func (a *authorizer) decide(user string, action Action, resources ...string) (bool, string) {
	allowed := false
	for _, p := range a.policies {
		if !match(p.User, user) {
			continue
		}
		for _, res := range resources {
			if !match(p.Resource, res) {
				continue
			}
			switch {
			case p.Effect == EffectDeny && match(string(p.Action), string(action)):
				return false, fmt.Sprintf("policy %q denies %s %s on %s", p.String(), user, action, res)
			case p.Effect == EffectAllow && (match(string(p.Action), string(action)) || implies(p.Action, action)):
				allowed = true
			}
		}
	}
	if allowed || !a.defaultDeny {
		return true, ""
	}
	return false, fmt.Sprintf("no policy allows %s %s on %s (default deny)", user, action, strings.Join(resources, " or "))
}

// allow reports whether r's user may do action on at least one of
// resources, and records the first denial on r for the request log.
func (b *Broker) allow(r *request, action Action, resources ...string) bool {
	if !b.authz.active() {
		return true
	}
	ok, why := b.authz.decide(r.principal(), action, resources...)
	if !ok {
		r.deny(why)
	}
	return ok
}

// allowTopic reports whether r's user may do action on a topic.
func (b *Broker) allowTopic(r *request, action Action, topic string) bool {
	if !b.authz.active() {
		return true
	}
	return b.allow(r, action, TopicResource(b.cfg.view, topic))
}

// allowGroup reports whether r's user may do action on a group.
func (b *Broker) allowGroup(r *request, action Action, group string) bool {
	if !b.authz.active() {
		return true
	}
	return b.allow(r, action, GroupResource(b.cfg.view, group))
}

// allowView reports whether r's user may do action on the view.
func (b *Broker) allowView(r *request, action Action) bool {
	if !b.authz.active() {
		return true
	}
	return b.allow(r, action, ViewResource(b.cfg.view))
}

// aclOperation pairs a Kafka ACL operation with the VAST action the broker
// checks for it; an empty action is one the broker never checks.
type aclOperation struct {
	op     kmsg.ACLOperation
	action Action
}

// topicOperations are Kafka's operations on a topic
// (AclEntry.supportedOperations(TOPIC)). ALTER, which adds partitions, is
// KafkaCreate, as CreatePartitions checks it.
var topicOperations = []aclOperation{
	{kmsg.ACLOperationRead, KafkaRead},
	{kmsg.ACLOperationWrite, KafkaWrite},
	{kmsg.ACLOperationCreate, KafkaCreate},
	{kmsg.ACLOperationDelete, KafkaDelete},
	{kmsg.ACLOperationAlter, KafkaCreate},
	{kmsg.ACLOperationDescribe, KafkaDescribe},
	{kmsg.ACLOperationDescribeConfigs, KafkaDescribeConfigs},
	{kmsg.ACLOperationAlterConfigs, KafkaAlterConfigs},
}

// clusterOperations are Kafka's operations on the cluster
// (AclEntry.supportedOperations(CLUSTER)), checked on the view. ALTER,
// CLUSTER_ACTION and IDEMPOTENT_WRITE have no VAST action.
var clusterOperations = []aclOperation{
	{kmsg.ACLOperationCreate, KafkaCreate},
	{kmsg.ACLOperationClusterAction, ""},
	{kmsg.ACLOperationDescribeConfigs, KafkaDescribeConfigs},
	{kmsg.ACLOperationAlterConfigs, KafkaAlterConfigs},
	{kmsg.ACLOperationIdempotentWrite, ""},
	{kmsg.ACLOperationAlter, ""},
	{kmsg.ACLOperationDescribe, KafkaDescribe},
}

// authorizedOperations returns the bitfield of the operations in ops that
// r's user may do, as Kafka's authorizedOperations answers it (KIP-430): bit
// n set for ACL operation n. Without policies every operation is set, as in
// Kafka without an authorizer; with policies each is decided as a request
// for it would be, on the resources resourcesFor names, and one with no
// VAST action is allowed unless the broker denies by default. It records no
// denial in the request log.
func (b *Broker) authorizedOperations(r *request, ops []aclOperation, resourcesFor func(Action) []string) int32 {
	var bits int32
	for _, o := range ops {
		ok := true
		switch {
		case !b.authz.active():
		case o.action == "":
			ok = !b.authz.defaultDeny
		default:
			ok, _ = b.authz.decide(r.principal(), o.action, resourcesFor(o.action)...)
		}
		if ok {
			bits |= 1 << o.op
		}
	}
	return bits
}

// topicAuthorizedOperations returns what r's user may do on topic, for
// Metadata v8+. KafkaCreate (CREATE and ALTER) counts on the topic or the
// view, as creating a topic checks it.
func (b *Broker) topicAuthorizedOperations(r *request, topic string) int32 {
	return b.authorizedOperations(r, topicOperations, func(a Action) []string {
		if a == KafkaCreate {
			return []string{TopicResource(b.cfg.view, topic), ViewResource(b.cfg.view)}
		}
		return []string{TopicResource(b.cfg.view, topic)}
	})
}

// clusterAuthorizedOperations returns what r's user may do on the cluster,
// which is the view, for Metadata v8-v10: 0 without KafkaDescribe on the
// view, as Kafka answers 0 without DESCRIBE on the cluster.
func (b *Broker) clusterAuthorizedOperations(r *request) int32 {
	view := []string{ViewResource(b.cfg.view)}
	if b.authz.active() {
		if ok, _ := b.authz.decide(r.principal(), KafkaDescribe, view...); !ok {
			return 0
		}
	}
	return b.authorizedOperations(r, clusterOperations, func(Action) []string { return view })
}

// saslRequired reports whether the listener requires SASL authentication:
// it does as soon as one user is configured.
func (b *Broker) saslRequired() bool { return b.creds != nil && len(b.creds.plain) > 0 }

// saslMechanisms returns the mechanisms the broker offers: PLAIN, and the
// SCRAM ones unless rule PlainSASLOnly is enforced.
func (b *Broker) saslMechanisms() []string {
	if b.enforced(rules.PlainSASLOnly) {
		return []string{mechanismPlain}
	}
	out := []string{mechanismPlain}
	for _, m := range scramMechanisms {
		out = append(out, m.name)
	}
	return out
}

// checkPlain checks a SASL/PLAIN token (authzid NUL user NUL password,
// RFC 4616). It returns the user named, whether the credentials are good,
// the message for the client and, for the request log, why they are not.
func (b *Broker) checkPlain(token []byte) (user string, ok bool, msg, why string) {
	if len(token) > maxSASLTokenSize {
		why = tokenTooLong(len(token))
		return "", false, "Authentication failed: " + why, why
	}
	parts := bytes.Split(token, []byte{0})
	if len(parts) != 3 {
		msg = fmt.Sprintf("Invalid SASL/PLAIN response: expected 3 tokens, got %d", len(parts))
		return "", false, msg, "malformed SASL/PLAIN token"
	}
	authzid, user, pass := string(parts[0]), string(parts[1]), parts[2]
	switch {
	case user == "":
		return "", false, "Authentication failed: username not specified", "SASL/PLAIN token without a user name"
	case len(pass) == 0:
		return user, false, "Authentication failed: password not specified", "SASL/PLAIN token without a password"
	case authzid != "" && authzid != user:
		return user, false, "Authentication failed: Client requested an authorization id that is different from username",
			"SASL/PLAIN authorization id " + fmt.Sprintf("%q", authzid) + " differs from the user name"
	}
	known, good := b.creds.checkPlain(user, pass)
	if !known {
		return user, false, "Authentication failed: Invalid username or password", "SASL/PLAIN: unknown user " + fmt.Sprintf("%q", user)
	}
	if !good {
		return user, false, "Authentication failed: Invalid username or password", "SASL/PLAIN: wrong password for user " + fmt.Sprintf("%q", user)
	}
	return user, true, "", ""
}

// tokenTooLong says why a SASL token of size bytes is refused.
func tokenTooLong(size int) string {
	return fmt.Sprintf("SASL token of %d bytes is over the broker's %d-byte limit", size, maxSASLTokenSize)
}

// saslStep takes one SASL token of the connection's mechanism: the whole
// login for PLAIN, one message of the exchange for SCRAM. It returns the
// answer to send (SCRAM's server-first or server-final message; nothing for
// PLAIN), whether the client is now authenticated, the user it names, and
// on failure the message for the client and, for the request log, why.
// After a failure the connection must close.
func (b *Broker) saslStep(c *clientConn, token []byte) (answer []byte, done bool, user, msg, why string) {
	if c.mechanism == mechanismPlain {
		user, ok, msg, why := b.checkPlain(token)
		return nil, ok, user, msg, why
	}
	x := c.scram
	if len(token) > maxSASLTokenSize {
		why = tokenTooLong(len(token))
		return nil, false, x.user, scramFailed(x.mech), why
	}
	answer, done, why = x.next(token)
	if why != "" {
		return nil, false, x.user, scramFailed(x.mech), why
	}
	return answer, done, x.user, "", ""
}

// handleSaslHandshake answers SaslHandshake v0-v1: the client names its
// mechanism and the broker lists the ones it offers.
//
// v0 means the next frames are raw SASL tokens, [int32 size][bytes], and
// their answers raw bytes likewise (KIP-152); v1 means SaslAuthenticate
// requests follow. An unsupported mechanism gets
// UNSUPPORTED_SASL_MECHANISM with the list, then the connection closes. A
// second handshake before authentication closes the connection; after it,
// or on a listener without users, the answer is ILLEGAL_SASL_STATE, as in
// Kafka. PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 are offered, as a Kafka
// listener with sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512.
// VAST: PLAIN is the only mechanism (VAST's Consume events page and
// management API), rule PlainSASLOnly: a SCRAM handshake is refused, with
// the rule and its action in the request log.
// Authorizes: nothing; it is served before authentication.
func handleSaslHandshake(b *Broker, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.SASLHandshakeRequest)
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	c := r.conn
	scramMech := scramMechanismNamed(req.Mechanism)
	switch {
	case !b.saslRequired():
		resp.ErrorCode = kerr.IllegalSaslState.Code
	case c.authenticated:
		resp.ErrorCode = kerr.IllegalSaslState.Code
		resp.SupportedMechanisms = b.saslMechanisms()
	case c.mechanism != "":
		resp.ErrorCode = kerr.IllegalSaslState.Code
		resp.SupportedMechanisms = b.saslMechanisms()
		r.closeAfter = "a second SaslHandshake before authentication"
	case scramMech != nil && b.vast(r, rules.PlainSASLOnly, rules.Refused, "", "", func() string {
		return fmt.Sprintf("SaslHandshake v%d asked for %s; VAST offers SASL/PLAIN only", r.version, scramMech.name)
	}):
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		resp.SupportedMechanisms = b.saslMechanisms()
		r.why = rules.PlainSASLOnly.Refusal("VAST offers SASL/PLAIN only, not "+scramMech.name, "")
		r.closeAfter = r.why
	case req.Mechanism != mechanismPlain && scramMech == nil:
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		resp.SupportedMechanisms = b.saslMechanisms()
		r.closeAfter = fmt.Sprintf("unsupported SASL mechanism %q (offered: %s)", clip(req.Mechanism), strings.Join(resp.SupportedMechanisms, ", "))
	default:
		resp.SupportedMechanisms = b.saslMechanisms()
		c.mechanism = req.Mechanism
		if scramMech != nil {
			c.scram = b.creds.newScramExchange(scramMech)
		}
		c.rawSASLNext = r.version == 0
	}
	return resp
}

// handleSaslAuthenticate answers SaslAuthenticate v0-v2, which carries the
// SASL tokens after a v1 handshake: PLAIN's one token, or SCRAM's
// client-first and client-final messages (answered with the server-first
// and server-final ones).
//
// v1 adds the session lifetime (0: no re-authentication), v2 flexible
// encoding. Wrong credentials, an unknown user, a malformed token or one
// over 8 KiB (maxSASLTokenSize, refused unparsed) get
// SASL_AUTHENTICATION_FAILED with a message, then the connection closes;
// for SCRAM the message is Kafka's one for every failure, so that it does
// not tell which users exist.
// Before a handshake it closes with ILLEGAL_SASL_STATE; after
// authentication, or on a listener without users, it answers
// ILLEGAL_SASL_STATE.
// VAST: PLAIN only (VAST's Consume events page and management API).
// Authorizes: nothing; it is served before authentication.
func handleSaslAuthenticate(b *Broker, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.SASLAuthenticateRequest)
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	c := r.conn
	switch {
	case !b.saslRequired():
		resp.ErrorCode = kerr.IllegalSaslState.Code
		resp.ErrorMessage = kmsg.StringPtr("this listener does not use SASL")
	case c.authenticated:
		resp.ErrorCode = kerr.IllegalSaslState.Code
		resp.ErrorMessage = kmsg.StringPtr("already authenticated")
	case c.mechanism == "" || c.rawSASLNext:
		resp.ErrorCode = kerr.IllegalSaslState.Code
		resp.ErrorMessage = kmsg.StringPtr("SaslAuthenticate before a v1 SaslHandshake")
		r.closeAfter = "SaslAuthenticate before a v1 SaslHandshake"
	default:
		answer, done, user, msg, why := b.saslStep(c, req.SASLAuthBytes)
		r.user = user
		if why != "" {
			resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
			resp.ErrorMessage = kmsg.StringPtr(msg)
			r.deny(why)
			r.closeAfter = why
			break
		}
		resp.SASLAuthBytes = answer
		if done {
			c.user, c.authenticated, c.scram = user, true, nil
		}
	}
	return resp
}

// rawSASLAuthenticate reads a raw SASL token that follows a v0
// SaslHandshake ([int32 size][token], not a Kafka request) and answers it
// raw: PLAIN's one token with an empty challenge ([int32 0]) when the
// credentials are good, SCRAM's two with the server-first and server-final
// messages. Bad credentials, a token over maxSASLTokenSize (not read) or a
// bad frame close the connection without an answer, as Kafka does. The
// request log records each token as SaslAuthenticate version -1.
func (c *clientConn) rawSASLAuthenticate() error {
	size, err := c.readSize()
	if err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return protoErr("truncated SASL token size")
		}
		return err
	}
	if size < 0 || size > maxSASLFrameSize {
		return protoErr("raw SASL token size %d out of range", size)
	}
	rec := RequestRecord{API: kmsg.SASLAuthenticate, Version: -1, ClientID: c.clientID}
	if size > maxSASLTokenSize { // refused unread
		why := tokenTooLong(int(size))
		rec.ErrorCode, rec.Denied, rec.Closed = kerr.SaslAuthenticationFailed.Code, why, true
		c.logRequest(rec, nil)
		return &closeError{reason: why}
	}
	token, err := c.readFrame(int(size))
	if err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return protoErr("truncated SASL token")
		}
		return err
	}
	answer, done, user, _, why := c.b.saslStep(c, token)
	rec.User = user
	if why != "" {
		rec.ErrorCode, rec.Denied, rec.Closed = kerr.SaslAuthenticationFailed.Code, why, true
		c.logRequest(rec, nil)
		return &closeError{reason: why}
	}
	c.logRequest(rec, nil)
	if done {
		c.rawSASLNext = false
		c.user, c.authenticated, c.scram = user, true, nil
	}
	frame := make([]byte, 4, 4+len(answer))
	binary.BigEndian.PutUint32(frame, uint32(len(answer)))
	return c.send(append(frame, answer...))
}

// closeError asks serve to close the connection for a reason that is not a
// malformed request (failed authentication, say).
type closeError struct{ reason string }

func (e *closeError) Error() string { return e.reason }
