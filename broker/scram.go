package broker

// SASL/SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) as Kafka serves
// them, and the credentials every SASL mechanism checks. The exchange
// itself is github.com/xdg-go/scram's server; this file holds what Kafka
// adds around it: the mechanisms and their iteration bounds, the
// client-first checks Kafka makes (gs2 header "n", an authorization id
// equal to the user, extensions, tokenauth), one answer for every failure,
// and credentials derived once per user so that no password is kept.

import (
	"bytes"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"errors"
	"fmt"
	"hash"
	"slices"
	"strings"
	"sync"

	"github.com/xdg-go/scram"
)

// scramMechanism is one SCRAM mechanism Kafka serves.
type scramMechanism struct {
	// name is the SASL mechanism name, "SCRAM-SHA-256".
	name string
	// kafkaType is the mechanism's number in DescribeUserScramCredentials
	// and AlterUserScramCredentials (Kafka's ScramMechanism): 1 for
	// SCRAM-SHA-256, 2 for SCRAM-SHA-512.
	kafkaType int8
	newHash   func() hash.Hash
	generator scram.HashGeneratorFcn
}

// scramMechanisms are the SCRAM mechanisms Kafka serves, in the order of
// their Kafka numbers.
var scramMechanisms = [...]scramMechanism{
	{name: "SCRAM-SHA-256", kafkaType: 1, newHash: sha256.New, generator: scram.SHA256},
	{name: "SCRAM-SHA-512", kafkaType: 2, newHash: sha512.New, generator: scram.SHA512},
}

// scramMechanismNamed returns the SCRAM mechanism of a SASL mechanism
// name, or nil.
func scramMechanismNamed(name string) *scramMechanism {
	for i := range scramMechanisms {
		if scramMechanisms[i].name == name {
			return &scramMechanisms[i]
		}
	}
	return nil
}

// scramMechanismOfType returns the SCRAM mechanism of a Kafka
// ScramMechanism number, or nil for one Kafka does not know (0 is its
// UNKNOWN).
func scramMechanismOfType(t int8) *scramMechanism {
	for i := range scramMechanisms {
		if scramMechanisms[i].kafkaType == t {
			return &scramMechanisms[i]
		}
	}
	return nil
}

// Bounds of SCRAM credentials.
const (
	// minScramIterations and maxScramIterations are the iteration counts
	// Kafka accepts for both mechanisms (ScramMechanism.minIterations,
	// ScramControlManager.MAX_ITERATIONS); others get
	// UNACCEPTABLE_CREDENTIAL.
	minScramIterations = 4096
	maxScramIterations = 16384
	// scramIterations is the count of the credentials derived for the
	// users configured at start: kafka-configs.sh's default.
	scramIterations = minScramIterations
	// scramSaltSize is the size of the random salt of a derived
	// credential.
	scramSaltSize = 24
	// maxScramSaltSize bounds a salt AlterUserScramCredentials may set
	// (Kafka has no bound below the request size): a larger one gets
	// UNACCEPTABLE_CREDENTIAL.
	maxScramSaltSize = 1024
	// maxScramUsers bounds the users with SCRAM credentials, so that a
	// client cannot make the broker hold credentials without end (Kafka
	// has no bound); each costs a few hundred bytes. An upsertion for a
	// new user past it gets UNACCEPTABLE_CREDENTIAL.
	maxScramUsers = 10_000
)

// scramCredential is what the broker keeps of one user's password for one
// mechanism: the salt, the iteration count, and the stored and server keys
// derived from them (RFC 5802, section 3). Neither the password nor the
// salted password can be read back from it.
type scramCredential struct {
	salt                 []byte
	iterations           int
	storedKey, serverKey []byte
}

// scramCredentialFromSalted derives the stored and server keys from a
// salted password, as Kafka does for AlterUserScramCredentials:
// StoredKey = H(HMAC(SaltedPassword, "Client Key")), ServerKey =
// HMAC(SaltedPassword, "Server Key").
func (m *scramMechanism) credentialFromSalted(saltedPassword, salt []byte, iterations int) scramCredential {
	mac := func(msg string) []byte {
		h := hmac.New(m.newHash, saltedPassword)
		h.Write([]byte(msg))
		return h.Sum(nil)
	}
	h := m.newHash()
	h.Write(mac("Client Key"))
	return scramCredential{salt: bytes.Clone(salt), iterations: iterations, storedKey: h.Sum(nil), serverKey: mac("Server Key")}
}

// credentialFromPassword derives a credential from a password with a new
// random salt, as kafka-configs.sh --alter --add-config
// 'SCRAM-SHA-256=[password=...]' does. The password is used as its UTF-8
// bytes, without SASLprep, as Kafka uses it.
func (m *scramMechanism) credentialFromPassword(password string, iterations int) (scramCredential, error) {
	salt := make([]byte, scramSaltSize)
	rand.Read(salt)
	salted, err := pbkdf2.Key(m.newHash, password, salt, iterations, m.newHash().Size())
	if err != nil {
		return scramCredential{}, err
	}
	return m.credentialFromSalted(salted, salt, iterations), nil
}

// credentials holds what the broker checks SASL logins against, derived
// once when the broker starts: for each user configured with WithUsers an
// HMAC of the password for PLAIN and a SCRAM credential for each
// mechanism. AlterUserScramCredentials changes the SCRAM ones. No
// password is kept.
type credentials struct {
	// plainKey is the random key of the PLAIN verifiers; plain maps a user
	// to HMAC-SHA-256(plainKey, password).
	plainKey []byte
	plain    map[string][]byte

	mu    sync.RWMutex
	scram [len(scramMechanisms)]map[string]scramCredential // by mechanism, in scramMechanisms' order
}

// MaxUsers bounds the users a broker is started with (WithUsers, -user):
// each costs two PBKDF2 derivations of 4096 iterations at start (about
// 3 ms), so a list without end would stall the start.
const MaxUsers = 1000

// newCredentials derives the credentials of users, name to password.
func newCredentials(users map[string]string) (*credentials, error) {
	if len(users) > MaxUsers {
		return nil, fmt.Errorf("vastfake: %d SASL users: want at most %d", len(users), MaxUsers)
	}
	c := &credentials{plainKey: make([]byte, 32), plain: make(map[string][]byte, len(users))}
	rand.Read(c.plainKey)
	for i := range c.scram {
		c.scram[i] = make(map[string]scramCredential, len(users))
	}
	for name, pass := range users {
		c.plain[name] = c.plainMAC([]byte(pass))
		for i := range scramMechanisms {
			cred, err := scramMechanisms[i].credentialFromPassword(pass, scramIterations)
			if err != nil {
				return nil, fmt.Errorf("vastfake: SASL user %q: %s credential: %w", name, scramMechanisms[i].name, err)
			}
			c.scram[i][name] = cred
		}
	}
	return c, nil
}

func (c *credentials) plainMAC(pass []byte) []byte {
	h := hmac.New(sha256.New, c.plainKey)
	h.Write(pass)
	return h.Sum(nil)
}

// checkPlain reports whether user exists for PLAIN and pass is its
// password, in constant time for a known user.
func (c *credentials) checkPlain(user string, pass []byte) (known, ok bool) {
	want, known := c.plain[user]
	if !known {
		return false, false
	}
	return true, subtle.ConstantTimeCompare(want, c.plainMAC(pass)) == 1
}

// lookup returns user's credential for mechanism m.
func (c *credentials) lookup(m *scramMechanism, user string) (scramCredential, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	cred, ok := c.scram[m.kafkaType-1][user]
	return cred, ok
}

// scramUsers returns the users with at least one SCRAM credential, sorted.
func (c *credentials) scramUsers() []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]string, 0, len(c.scram[0]))
	for u := range c.scram[0] {
		out = append(out, u)
	}
	for u := range c.scram[1] {
		if _, ok := c.scram[0][u]; !ok {
			out = append(out, u)
		}
	}
	slices.Sort(out)
	return out
}

// scramFailed is what Kafka tells a client whose SCRAM exchange failed,
// whatever the reason (SaslServerAuthenticator), so that the answer says
// nothing of which users exist.
func scramFailed(m *scramMechanism) string {
	return "Authentication failed during authentication due to invalid credentials with SASL mechanism " + m.name
}

// scramExchange is one connection's SCRAM conversation, from its
// SaslHandshake to its second token.
type scramExchange struct {
	mech *scramMechanism
	conv *scram.ServerConversation
	user string // the user the client-first message names
	step int    // tokens received so far
	// clientNonce is the client-first message's nonce, nonce the
	// server-first message's (the client's and the server's together).
	clientNonce, nonce string
}

// newScramExchange starts a conversation for mechanism m that checks
// against c.
func (c *credentials) newScramExchange(m *scramMechanism) *scramExchange {
	x := &scramExchange{mech: m}
	server, _ := m.generator.NewServer(func(user string) (scram.StoredCredentials, error) {
		cred, ok := c.lookup(m, user)
		if !ok {
			return scram.StoredCredentials{}, errUnknownScramUser
		}
		return scram.StoredCredentials{KeyFactors: scram.KeyFactors{Salt: string(cred.salt), Iters: cred.iterations},
			StoredKey: cred.storedKey, ServerKey: cred.serverKey}, nil
	})
	x.conv = server.NewConversation()
	return x
}

var errUnknownScramUser = errors.New("unknown user")

// next takes the client's next SCRAM token and returns the server's
// answer, and done once the client has proved it knows the password
// (the answer is then the server-final message). On failure it returns
// why, for the request log: never the token, a proof or a key. The
// connection must then be closed.
func (x *scramExchange) next(token []byte) (answer []byte, done bool, why string) {
	x.step++
	fail := func(reason string) ([]byte, bool, string) {
		return nil, false, x.mech.name + ": " + reason
	}
	switch x.step {
	case 1:
		user, nonce, reason := checkClientFirst(string(token))
		x.user, x.clientNonce = user, nonce
		if reason != "" {
			return fail(reason)
		}
		out, err := x.conv.Step(string(token))
		switch {
		case errors.Is(err, errUnknownScramUser):
			return fail(fmt.Sprintf("unknown user %q", clip(user)))
		case err != nil:
			return fail("malformed client-first message")
		}
		x.nonce, _ = strings.CutPrefix(strings.Split(out, ",")[0], "r=")
		return []byte(out), false, ""
	case 2:
		if fields := strings.Split(string(token), ","); len(fields) > 1 && fields[1] == "r="+x.clientNonce+x.nonce {
			return fail(librdkafkaNonce)
		}
		out, err := x.conv.Step(string(token))
		switch {
		case err == nil && x.conv.Valid():
			return []byte(out), true, ""
		case out == scram.ErrInvalidProof:
			return fail(fmt.Sprintf("wrong password for user %q (the client proof does not match)", clip(x.user)))
		case out == scram.ErrOtherError && strings.Contains(err.Error(), "nonce"):
			return fail("the client-final message's nonce is not the one the server sent")
		case out == scram.ErrChannelBindingsDontMatch:
			return fail("the client-final message's channel binding does not match its gs2 header")
		}
		return fail("malformed client-final message")
	}
	return fail("a token after the exchange ended")
}

// librdkafkaNonce says why a client-final message whose nonce is the
// client's nonce followed by the server-first message's is refused: that
// is librdkafka before 2.6.1 (confluentinc/librdkafka#4895), which Kafka
// 3.8.1 to 3.9 accepted and Kafka 4 refuses again, as RFC 5802 says.
const librdkafkaNonce = "the client-final message repeats the client nonce before the server's, as librdkafka before 2.6.1 does; " +
	"Kafka 4 refuses it (Kafka 3.8.1 to 3.9 accepted it): upgrade librdkafka, or the client built on it, to librdkafka 2.6.1 or later"

// checkClientFirst checks what Kafka's ScramSaslServer checks in a
// client-first message beyond RFC 5802's syntax, and returns the user it
// names (decoded), its nonce and, when it is refused, why:
//   - the gs2 header is "n": no channel binding (Kafka offers none, so
//     "y" and "p" do not parse);
//   - the nonce is one or more printable characters;
//   - an authorization id, if any, is the user name;
//   - extensions after the nonce (KIP-84's key=value pairs) are accepted
//     and ignored, except tokenauth=true, a delegation-token login, which
//     fails: vastfake issues no delegation tokens.
func checkClientFirst(msg string) (user, nonce, why string) {
	fields := strings.Split(msg, ",")
	if len(fields) < 4 || fields[0] != "n" {
		return "", "", "malformed client-first message (Kafka accepts only the gs2 header \"n\": no channel binding)"
	}
	name, ok := strings.CutPrefix(fields[2], "n=")
	if !ok {
		return "", "", "malformed client-first message"
	}
	user = decodeSaslName(name)
	if authzid, ok := strings.CutPrefix(fields[1], "a="); ok && decodeSaslName(authzid) != user {
		return user, "", "the authorization id differs from the user name"
	} else if !ok && fields[1] != "" {
		return user, "", "malformed client-first message"
	}
	nonce, ok = strings.CutPrefix(fields[3], "r=")
	if !ok || nonce == "" || strings.IndexFunc(nonce, func(r rune) bool { return r < 0x21 || r > 0x7e }) >= 0 {
		return user, "", "the client-first message has no valid nonce (printable characters after r=)"
	}
	for _, ext := range fields[4:] {
		k, v, ok := strings.Cut(ext, "=")
		if !ok || k == "" {
			return user, "", "malformed extension in the client-first message"
		}
		if k == "tokenauth" && strings.EqualFold(v, "true") {
			return user, "", "delegation-token login (tokenauth=true): vastfake issues no delegation tokens"
		}
	}
	return user, nonce, ""
}

// decodeSaslName undoes RFC 5802's escaping of "," and "=" in a name.
func decodeSaslName(s string) string {
	return strings.NewReplacer("=2C", ",", "=3D", "=").Replace(s)
}
