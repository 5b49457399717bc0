package broker

// SCRAM credential admin (KIP-554): DescribeUserScramCredentials and
// AlterUserScramCredentials, what kafka-configs.sh --entity-type users and
// Admin.describeUserScramCredentials/alterUserScramCredentials send.

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleDescribeUserScramCredentials answers DescribeUserScramCredentials
// v0: per user, the mechanisms it has a SCRAM credential for and their
// iteration counts (never a salt or a key). Null or empty Users describes
// every user with a credential. A user named twice gets DUPLICATE_RESOURCE,
// one without a credential RESOURCE_NOT_FOUND, with Kafka's messages.
// VAST: not served (rule PlainSASLOnly: VAST offers SASL/PLAIN only).
// Authorizes: KafkaDescribe on the view (Kafka: DESCRIBE on the cluster;
// CLUSTER_AUTHORIZATION_FAILED for the whole request).
func handleDescribeUserScramCredentials(b *Broker, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.DescribeUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	if b.authz.active() && !b.allowView(r, KafkaDescribe) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		resp.ErrorMessage = kmsg.StringPtr("Cluster authorization failed.")
		return resp
	}
	var users []string
	duplicate := map[string]bool{}
	if len(req.Users) == 0 {
		users = b.creds.scramUsers()
	} else {
		for _, u := range req.Users {
			if _, seen := duplicate[u.Name]; seen {
				duplicate[u.Name] = true
				continue
			}
			duplicate[u.Name] = false
			users = append(users, u.Name)
		}
	}
	for _, u := range users {
		res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		res.User = u
		for i := range scramMechanisms {
			if cred, ok := b.creds.lookup(&scramMechanisms[i], u); ok {
				info := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
				info.Mechanism, info.Iterations = scramMechanisms[i].kafkaType, int32(cred.iterations)
				res.CredentialInfos = append(res.CredentialInfos, info)
			}
		}
		switch {
		case duplicate[u]:
			res.CredentialInfos = nil
			res.ErrorCode = kerr.DuplicateResource.Code
			res.ErrorMessage = kmsg.StringPtr("Cannot describe SCRAM credentials for the same user twice in a single request: " + clip(u))
		case len(res.CredentialInfos) == 0:
			res.ErrorCode = kerr.ResourceNotFound.Code
			res.ErrorMessage = kmsg.StringPtr("Attempt to describe nonexistent SCRAM credential for user " + clip(u))
		}
		resp.Results = append(resp.Results, res)
	}
	return resp
}

// handleAlterUserScramCredentials answers AlterUserScramCredentials v0:
// deletions and upsertions of SCRAM credentials, each user at most once per
// request (else DUPLICATE_RESOURCE for that user), one result per user,
// the valid ones applied and the others refused, as Kafka's controller
// does:
//   - an empty user name gets UNACCEPTABLE_CREDENTIAL, a mechanism other
//     than 1 (SCRAM-SHA-256) or 2 (SCRAM-SHA-512) UNSUPPORTED_SASL_MECHANISM;
//   - an upsertion with fewer than 4096 or more than 16384 iterations gets
//     UNACCEPTABLE_CREDENTIAL ("Too few iterations", "Too many iterations");
//   - deleting a credential that does not exist gets RESOURCE_NOT_FOUND.
//
// vastfake also refuses with UNACCEPTABLE_CREDENTIAL an upsertion with an
// empty salt or salted password, a salt over 1 KiB, and a new user past
// maxScramUsers; Kafka's controller stores an empty salt, and fails an
// empty salted password with UNKNOWN_SERVER_ERROR. An upsertion derives the
// stored and server keys from the salted password and keeps those, not it.
// The users configured at start keep their PLAIN password whatever is
// altered here.
// VAST: not served (rule PlainSASLOnly: VAST offers SASL/PLAIN only).
// Authorizes: KafkaAlterConfigs on the view (Kafka: ALTER on the cluster;
// CLUSTER_AUTHORIZATION_FAILED for each user).
func handleAlterUserScramCredentials(b *Broker, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.AlterUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	type outcome struct {
		code int16
		msg  string
	}
	var order []string
	results := map[string]*outcome{}
	add := func(user string) (*outcome, bool) {
		if o, seen := results[user]; seen {
			o.code, o.msg = kerr.DuplicateResource.Code, "A user credential cannot be altered twice in the same request"
			return o, false
		}
		o := &outcome{}
		results[user] = o
		order = append(order, user)
		return o, true
	}
	denied := b.authz.active() && !b.allowView(r, KafkaAlterConfigs)
	validName := func(o *outcome, name string, mechanism int8) *scramMechanism {
		m := scramMechanismOfType(mechanism)
		switch {
		case denied:
			o.code, o.msg = kerr.ClusterAuthorizationFailed.Code, "Cluster authorization failed."
		case name == "":
			o.code, o.msg = kerr.UnacceptableCredential.Code, "Username must not be empty"
		case m == nil:
			o.code, o.msg = kerr.UnsupportedSaslMechanism.Code, "Unknown SCRAM mechanism"
		}
		return m
	}
	type deletion struct {
		user string
		mech *scramMechanism
	}
	type upsertion struct {
		user string
		mech *scramMechanism
		cred scramCredential
	}
	var deletions []deletion
	var upsertions []upsertion
	for _, d := range req.Deletions {
		o, first := add(d.Name)
		if !first {
			continue
		}
		if m := validName(o, d.Name, d.Mechanism); o.code == 0 {
			deletions = append(deletions, deletion{d.Name, m})
		}
	}
	for _, u := range req.Upsertions {
		o, first := add(u.Name)
		if !first {
			continue
		}
		m := validName(o, u.Name, u.Mechanism)
		switch {
		case o.code != 0:
		case u.Iterations < minScramIterations:
			o.code, o.msg = kerr.UnacceptableCredential.Code, "Too few iterations"
		case u.Iterations > maxScramIterations:
			o.code, o.msg = kerr.UnacceptableCredential.Code, "Too many iterations"
		case len(u.Salt) == 0:
			o.code, o.msg = kerr.UnacceptableCredential.Code, "Salt must not be empty"
		case len(u.Salt) > maxScramSaltSize:
			o.code, o.msg = kerr.UnacceptableCredential.Code, "Salt is over the broker's 1024-byte limit"
		case len(u.SaltedPassword) == 0:
			o.code, o.msg = kerr.UnacceptableCredential.Code, "Salted password must not be empty"
		default:
			upsertions = append(upsertions, upsertion{u.Name, m, m.credentialFromSalted(u.SaltedPassword, u.Salt, int(u.Iterations))})
		}
	}
	// A user altered twice is refused whole, whichever came first.
	deletions = slices.DeleteFunc(deletions, func(d deletion) bool { return results[d.user].code != 0 })
	upsertions = slices.DeleteFunc(upsertions, func(u upsertion) bool { return results[u.user].code != 0 })

	c := b.creds
	c.mu.Lock()
	for _, d := range deletions {
		creds := c.scram[d.mech.kafkaType-1]
		if _, ok := creds[d.user]; !ok {
			o := results[d.user]
			o.code, o.msg = kerr.ResourceNotFound.Code, "Attempt to delete a user credential that does not exist"
			continue
		}
		delete(creds, d.user)
	}
	users := c.scramUserCount()
	for _, u := range upsertions {
		if !c.hasScramUser(u.user) {
			if users >= maxScramUsers {
				o := results[u.user]
				o.code, o.msg = kerr.UnacceptableCredential.Code, "the broker holds SCRAM credentials for at most 10000 users"
				continue
			}
			users++
		}
		c.scram[u.mech.kafkaType-1][u.user] = u.cred
	}
	c.mu.Unlock()

	for _, user := range order {
		res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		res.User = user
		if o := results[user]; o.code != 0 {
			res.ErrorCode, res.ErrorMessage = o.code, kmsg.StringPtr(o.msg)
		}
		resp.Results = append(resp.Results, res)
	}
	return resp
}

// hasScramUser reports whether user has a SCRAM credential; c.mu is held.
func (c *credentials) hasScramUser(user string) bool {
	for _, m := range c.scram {
		if _, ok := m[user]; ok {
			return true
		}
	}
	return false
}

// scramUserCount counts the users with a SCRAM credential; c.mu is held.
func (c *credentials) scramUserCount() int {
	n := len(c.scram[0])
	for u := range c.scram[1] {
		if _, ok := c.scram[0][u]; !ok {
			n++
		}
	}
	return n
}
