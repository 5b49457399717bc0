package broker

// The gate: what a request must pass before it is served. A connection that
// SASL requires to log in may send only ApiVersions and SASL until it has;
// an API this broker does not serve (one a rule hides, or none it knows)
// and a version outside the range it serves close the connection, as Kafka
// does, recorded in the request log.

import (
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/vastfake/vastfake/rules"
)

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
	c.b.recordError(&request{conn: c, clientID: c.clientID}, key, kerr.UnsupportedVersion.Code,
		func() string { return msg }, func() string {
			if version < a.min {
				return "the client predates Kafka 4: Kafka 4 removed " + name + " v" + strconv.Itoa(int(version)) +
					" (KIP-896) and VAST does not accept it either, so the app fails on both; upgrade the client (or the tool: Burrow 1.2 sends ListOffsets v0)"
			}
			return "the client sent a version newer than this broker knows without asking ApiVersions first; let it pick versions from ApiVersions"
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
