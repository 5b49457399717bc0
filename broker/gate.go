package broker

// The gate: what a request must pass before it is served. A connection that
// SASL requires to log in may send only ApiVersions and SASL until it has;
// an API this broker does not serve (one a rule hides, or none it knows)
// and a version outside the range it serves close the connection, as Kafka
// does, recorded in the request log.

import (
	"reflect"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/vastfake/vastfake/rules"
)

// gate decides whether in may be served, and returns its API or nil. It
// passes a request for an API this broker serves, at a version in the API's
// range, from a connection that has logged in where SASL requires it (or
// for an API allowed before: ApiVersions, SASL). On the way it notes the
// client id, and for a client that does not name its software what its
// versions say of it (fingerprint), and sets in's request and body. A
// request it does not pass closes the connection, as in Kafka, and is
// recorded in the request log: it returns nil with the error that closes
// it, or with nil when it answered the request itself (an ApiVersions at
// a version this broker does not know).
func (c *clientConn) gate(in *inbound) (*api, error) {
	key, version := in.key, in.version
	if key < 0 || int(key) >= len(c.b.apiByKey) || c.b.apiByKey[key] == nil {
		return nil, c.refuseUnserved(in)
	}
	a := c.b.apiByKey[key]
	if version < a.min || version > a.max {
		if key == int16(kmsg.ApiVersions) {
			return nil, c.answerUnknownApiVersions(in, a)
		}
		return nil, c.refuseVersion(a, key, version, in.hdr)
	}
	if c.software == "" && c.inferred == "" {
		c.fingerprint(key, version)
	}
	in.kreq = kmsg.RequestForKey(key)
	in.kreq.SetVersion(version)
	body, id, err := parseRequestHeader(in.hdr, in.kreq.IsFlexible())
	if err != nil {
		return nil, err
	}
	in.body = body
	if string(id) != c.clientID { // a client sends the same id every time: no new string then
		c.clientID = string(id)
	}
	if in.unauthenticated && !a.beforeAuth {
		return nil, c.requireLogin(key, version, nil)
	}
	return a, nil
}

// refuseUnserved closes the connection of a request for an API this
// broker does not serve, as Kafka does. One a rule hides is recorded with
// its rule (refuseHidden), or as a missing login when the connection has
// not logged in where SASL requires it; one not served even where its
// rule is audited (KIP-848 and share-group APIs vastfake has no handler
// for) is a finding of that rule; any other is a protocol error.
func (c *clientConn) refuseUnserved(in *inbound) error {
	key, version := in.key, in.version
	if key >= 0 && int(key) < len(c.b.hiddenBy) && c.b.hiddenBy[key] != "" {
		if in.unauthenticated { // no rule refusal for a client that never logged in
			return c.requireLogin(key, version, in.hdr)
		}
		return c.refuseHidden(key, version, in.hdr)
	}
	if key >= 0 && int(key) < len(c.b.auditedBy) && c.b.auditedBy[key] != 0 && !in.unauthenticated {
		// Not served even in Kafka's behaviour (KIP-848, share groups):
		// the connection closes as for any unknown API, with the finding.
		c.noteClientID(in.hdr)
		c.b.recordFinding(&request{conn: c, clientID: c.clientID, kreq: kmsg.RequestForKey(key)}, c.b.auditedBy[key], rules.Refused, "", "",
			func() string {
				return kmsg.NameForKey(key) + " v" + strconv.Itoa(int(version)) + ": VAST does not advertise it"
			})
	}
	return protoErr("unsupported api key %d", key)
}

// answerUnknownApiVersions answers an ApiVersions at a version this broker
// does not know as Kafka does (KIP-511): with a v0 response carrying
// UNSUPPORTED_VERSION and one key, ApiVersions' own versions, so that the
// client retries at one it knows. A v0 answer listing every key instead
// would read to the client as the final one, with no features (kgo then
// ran its transactions on v1). The client software a newer version names
// is noted first.
func (c *clientConn) answerUnknownApiVersions(in *inbound, a *api) error {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	key := kmsg.NewApiVersionsResponseApiKey()
	key.ApiKey, key.MinVersion, key.MaxVersion = a.key, a.min, a.advertised
	resp.ApiKeys = append(resp.ApiKeys, key)
	if in.version > a.max {
		c.noteSoftware(a.max, in.hdr)
	}
	c.logRequest(RequestRecord{API: kmsg.ApiVersions, Version: in.version, ClientID: c.clientID, ErrorCode: resp.ErrorCode}, nil)
	return c.write(in.corr, resp, false)
}

// auditUngated records a finding of the rule that would have kept r out
// at the gate, when that rule is audited and so let it through: an API
// a rule hides (or caps below its minimum), or a version above what the
// rule lets the broker advertise. A KIP-848 heartbeat's finding, and a
// share group request's, names its group.
func (c *clientConn) auditUngated(a *api, r *request) {
	id := c.b.auditedBy[a.key]
	if id == 0 || !(a.hiddenBy != "" || a.hiddenByCap() || r.version > a.advertised) {
		return
	}
	group := ""
	if a.share == groupCoordinator || id == rules.NoShareGroups {
		if gs := groupsOf(reflect.ValueOf(r.kreq).Elem()); len(gs) > 0 {
			group = gs[0]
		}
	}
	c.b.recordFinding(r, id, rules.Refused, "", group, func() string {
		return kmsg.NameForKey(a.key) + " v" + strconv.Itoa(int(r.version)) + ": VAST does not serve it"
	})
}

// refuseHidden answers a request for an API that a rule hides from
// ApiVersions (OffsetDelete under NoOffsetDelete, ConsumerGroupHeartbeat
// under ClassicGroupsOnly) as Kafka answers an API it does not serve: it
// closes the connection without answering. Unlike a malformed request, it
// is recorded in the request log with the rule (and Closed), so that
// Refusals and AssertRefused see it. hdr is the frame after the api key,
// version and correlation id.
func (c *clientConn) refuseHidden(key, version int16, hdr []byte) error {
	rule := c.b.hiddenBy[key]
	c.noteClientID(hdr)
	msg := kmsg.NameForKey(key) + " is not served by VAST, which leaves it out of ApiVersions; the connection is closed, as Kafka does for an API it does not serve"
	if id, ok := rules.Lookup(rule); ok {
		msg = id.Refusal(msg, "")
	}
	rec := RequestRecord{API: kmsg.Key(key), Version: version, ClientID: c.clientID,
		Message: msg, Rule: rule, User: c.user, Closed: true}
	c.logRequest(rec, nil)
	c.logRefusal(&rec, rule, "", key, version)
	return &closeError{reason: msg}
}

// refuseVersion closes the connection of a request whose version is
// outside the range the broker advertises for its API, as Kafka does (it
// cannot parse it, so it cannot answer it), after recording it in the
// request log with UNSUPPORTED_VERSION and the client id, logging it, and
// counting it among the errors answered without a rule with advice: a
// version below the range is one Kafka 4 removed (KIP-896), so the client
// predates Kafka 4, and VAST does not accept it either. hdr is the frame
// after the api key, version and correlation id.
func (c *clientConn) refuseVersion(a *api, key, version int16, hdr []byte) error {
	c.noteClientID(hdr)
	name := kmsg.NameForKey(key)
	msg := name + " v" + strconv.Itoa(int(version)) + " is outside the versions this broker serves (" +
		strconv.Itoa(int(a.min)) + "-" + strconv.Itoa(int(a.max)) + "): closing the connection, as Kafka does"
	rec := RequestRecord{API: kmsg.Key(key), Version: version, ClientID: c.clientID,
		ErrorCode: kerr.UnsupportedVersion.Code, Message: msg, User: c.user, Closed: true}
	c.logRequest(rec, nil)
	c.b.log.Warn("closing connection: unsupported version", c.outcomeAttrs(&rec, "api", name, "version", version)...)
	c.b.recordError(&request{conn: c, clientID: c.clientID}, answerError{api: key, code: kerr.UnsupportedVersion.Code},
		func() string { return msg }, func() string {
			if version < a.min {
				return "the client predates Kafka 4: Kafka 4 removed " + name + " v" + strconv.Itoa(int(version)) +
					" (KIP-896) and VAST does not accept it either, so the app fails on both; upgrade the client (or the tool: Burrow 1.2 sends ListOffsets v0)"
			}
			return "the client sent a version newer than this broker knows without asking ApiVersions first; let it pick versions from ApiVersions where it has a setting for that (api.version.request=true in librdkafka), else no setting fixes it: upgrade the client or use another"
		})
	return &closeError{reason: msg}
}

// requireLogin closes a connection that sent a request other than
// ApiVersions or SASL before authenticating, as Kafka does, and records the
// denial. hdr, when not nil, is the frame after the api key, version and
// correlation id, for the client id.
func (c *clientConn) requireLogin(key, version int16, hdr []byte) error {
	if hdr != nil {
		c.noteClientID(hdr)
	}
	why := "SASL authentication required: " + kmsg.NameForKey(key) + " before SaslAuthenticate"
	c.logRequest(RequestRecord{API: kmsg.Key(key), Version: version, ClientID: c.clientID, Denied: why, Closed: true}, nil)
	return &closeError{reason: why}
}
