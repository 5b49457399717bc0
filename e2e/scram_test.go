package e2e_test

// SASL/SCRAM end to end: franz-go logging in with SCRAM-SHA-256 and
// SCRAM-SHA-512 in the kafka profile (v1 handshake, over TLS too), a raw v0
// exchange, every malformed or hostile SCRAM message answered as Kafka
// answers it and its connection closed, the credential admin APIs, VAST's
// refusal with its rule and action, and the audit profile's finding.

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/binary"
	"hash"
	"net"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	xdg "github.com/xdg-go/scram"

	"github.com/vastfake/vastfake/broker"
	"github.com/vastfake/vastfake/fixtures"
	"github.com/vastfake/vastfake/rules"
)

// scramOpt authenticates a kgo client with SCRAM-SHA-256 or -512.
func scramOpt(user, pass string, bits int) kgo.Opt {
	var m sasl.Mechanism = scram.Auth{User: user, Pass: pass}.AsSha256Mechanism()
	if bits == 512 {
		m = scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()
	}
	return kgo.SASL(m)
}

func TestSCRAMLogin(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Profile("kafka"), fixtures.Topic("orders", 1),
		fixtures.User(adminUser, adminPass), fixtures.User(appUser, appPass))
	b := k.Broker()

	for _, bits := range []int{256, 512} {
		mech := "SCRAM-SHA-" + map[int]string{256: "256", 512: "512"}[bits]
		t.Run(mech, func(t *testing.T) {
			cl := newClient(t, k.Addr(), scramOpt(appUser, appPass, bits))
			produceSync(t, cl, &kgo.Record{Topic: "orders", Value: []byte(mech)})
			rec, ok := findRequest(b, kmsg.Produce, func(r broker.RequestRecord) bool { return r.User == appUser })
			require.True(t, ok, "the request log names the user")
			assert.Zero(t, rec.ErrorCode)
			n := 0
			for _, r := range b.Requests() {
				if r.API == kmsg.SASLAuthenticate && r.User == appUser && r.ErrorCode == 0 {
					n++
				}
			}
			assert.GreaterOrEqual(t, n, 2, "a SCRAM login is two SaslAuthenticate requests")

			bad := newClient(t, k.Addr(), scramOpt(appUser, "not-the-password", bits), kgo.RequestRetries(0))
			_, err := kadm.NewClient(bad).ListTopics(shortCtx(t))
			require.ErrorIs(t, err, kerr.SaslAuthenticationFailed)
			assert.Contains(t, err.Error(), "invalid credentials with SASL mechanism "+mech, "Kafka's message")
			rec, ok = findRequest(b, kmsg.SASLAuthenticate, func(r broker.RequestRecord) bool { return r.Closed })
			require.True(t, ok)
			assert.Contains(t, rec.Denied, `wrong password for user "app"`)
		})
	}
	t.Run("PLAIN still", func(t *testing.T) {
		produceSync(t, k.ClientAs(adminUser, adminPass), &kgo.Record{Topic: "orders", Value: []byte("plain")})
	})
	t.Run("handshake lists every mechanism", func(t *testing.T) {
		c := dialRaw(t, k.Addr())
		h := kmsg.NewPtrSASLHandshakeRequest()
		h.Mechanism = "GSSAPI"
		resp := kmsg.NewPtrSASLHandshakeResponse()
		roundTrip(t, c, 1, h, resp, 1)
		assert.Equal(t, kerr.UnsupportedSaslMechanism.Code, resp.ErrorCode)
		assert.Equal(t, []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}, resp.SupportedMechanisms)
		assertClosed(t, c)
	})
	t.Run("v0 handshake, raw tokens", func(t *testing.T) {
		c := dialRaw(t, k.Addr())
		h := kmsg.NewPtrSASLHandshakeRequest()
		h.Mechanism = "SCRAM-SHA-512"
		hresp := kmsg.NewPtrSASLHandshakeResponse()
		roundTrip(t, c, 0, h, hresp, 1)
		require.Zero(t, hresp.ErrorCode)
		conv := scramClient(t, xdg.SHA512, appUser, appPass)
		first, err := conv.Step("")
		require.NoError(t, err)
		serverFirst := rawExchange(t, c, first)
		final, err := conv.Step(string(serverFirst))
		require.NoError(t, err)
		_, err = conv.Step(string(rawExchange(t, c, final)))
		require.NoError(t, err, "the server-final message proves the broker knows the credential")
		md := kmsg.NewPtrMetadataRequest()
		mresp := kmsg.NewPtrMetadataResponse()
		roundTrip(t, c, 9, md, mresp, 2)
		assert.NotEmpty(t, mresp.Topics, "authenticated: Metadata is answered")
	})
	k.WaitRecords("orders", 0, "SCRAM-SHA-256", "SCRAM-SHA-512", "plain")
}

// TestSCRAMOverTLS logs in with SCRAM-SHA-512 on a TLS listener
// (security.protocol=SASL_SSL).
func TestSCRAMOverTLS(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Profile("kafka"), fixtures.TLS(), fixtures.Topic("orders", 1), fixtures.User(appUser, appPass))
	cl := k.Client(scramOpt(appUser, appPass, 512))
	produceSync(t, cl, &kgo.Record{Topic: "orders", Value: []byte("over TLS")})
	k.WaitRecords("orders", 0, "over TLS")
}

// scramClient starts an RFC 5802 client conversation, for tests that send
// SCRAM messages by hand.
func scramClient(t *testing.T, h xdg.HashGeneratorFcn, user, pass string) *xdg.ClientConversation {
	cl, err := h.NewClientUnprepped(user, pass, "")
	require.NoError(t, err)
	return cl.NewConversation()
}

// rawExchange writes a raw SASL token (after a v0 handshake) and reads the
// raw answer.
func rawExchange(t *testing.T, c net.Conn, token string) []byte {
	t.Helper()
	_, err := c.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(token))), token...))
	require.NoError(t, err)
	return readFrame(t, c)
}

// saslAuthenticate sends one SaslAuthenticate v2 and returns the answer.
func saslAuthenticate(t *testing.T, c net.Conn, token string, corr int32) *kmsg.SASLAuthenticateResponse {
	t.Helper()
	a := kmsg.NewPtrSASLAuthenticateRequest()
	a.SASLAuthBytes = []byte(token)
	resp := kmsg.NewPtrSASLAuthenticateResponse()
	roundTrip(t, c, 2, a, resp, corr)
	return resp
}

// scramHandshake opens a connection with a v1 SaslHandshake for mech.
func scramHandshake(t *testing.T, addr, mech string) net.Conn {
	t.Helper()
	c := dialRaw(t, addr)
	h := kmsg.NewPtrSASLHandshakeRequest()
	h.Mechanism = mech
	resp := kmsg.NewPtrSASLHandshakeResponse()
	roundTrip(t, c, 1, h, resp, 1)
	require.Zero(t, resp.ErrorCode)
	return c
}

// TestSCRAMBadInput sends malformed and hostile SCRAM messages. Each gets
// SASL_AUTHENTICATION_FAILED with Kafka's one message for every SCRAM
// failure (which does not tell a wrong password from an unknown user), the
// connection closes, the request log says why without any secret, and an
// authenticated client keeps producing throughout.
func TestSCRAMBadInput(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Profile("kafka"), fixtures.Topic("ok", 1), fixtures.User(appUser, appPass))
	healthy := k.Client()
	const mech = "SCRAM-SHA-256"
	const kafkaMessage = "Authentication failed during authentication due to invalid credentials with SASL mechanism " + mech

	// first returns a good client-first message and its conversation.
	first := func(t *testing.T, user string) (*xdg.ClientConversation, string) {
		conv := scramClient(t, xdg.SHA256, user, appPass)
		msg, err := conv.Step("")
		require.NoError(t, err)
		return conv, msg
	}
	// finalOf answers a server-first message with conv, then lets edit
	// change the client-final message.
	finalOf := func(t *testing.T, conv *xdg.ClientConversation, serverFirst []byte, edit func(string) string) string {
		msg, err := conv.Step(string(serverFirst))
		require.NoError(t, err)
		return edit(msg)
	}
	field := func(msg, key string) string {
		for _, f := range strings.Split(msg, ",") {
			if v, ok := strings.CutPrefix(f, key+"="); ok {
				return v
			}
		}
		return ""
	}
	replace := func(msg, key, value string) string {
		fs := strings.Split(msg, ",")
		for i, f := range fs {
			if strings.HasPrefix(f, key+"=") {
				fs[i] = key + "=" + value
			}
		}
		return strings.Join(fs, ",")
	}

	cases := []struct {
		name string
		// clientFirst returns the first token; final, when set, the
		// second (from the server's answer to the first).
		clientFirst func(t *testing.T) (*xdg.ClientConversation, string)
		final       func(t *testing.T, conv *xdg.ClientConversation, serverFirst []byte) string
		why         string
	}{
		{name: "unknown user", clientFirst: func(t *testing.T) (*xdg.ClientConversation, string) { return first(t, "mallory") },
			why: `SCRAM-SHA-256: unknown user "mallory"`},
		{name: "client-first without a nonce", clientFirst: func(t *testing.T) (*xdg.ClientConversation, string) {
			return nil, "n,,n=app,r="
		}, why: "no valid nonce"},
		{name: "client-first with a nonce of spaces", clientFirst: func(t *testing.T) (*xdg.ClientConversation, string) {
			return nil, "n,,n=app,r=  "
		}, why: "no valid nonce"},
		{name: "client-first garbage", clientFirst: func(t *testing.T) (*xdg.ClientConversation, string) { return nil, "garbage" },
			why: "malformed client-first message"},
		{name: "client-first with channel binding", clientFirst: func(t *testing.T) (*xdg.ClientConversation, string) {
			return nil, "p=tls-unique,,n=app,r=abcdef"
		}, why: `only the gs2 header "n"`},
		{name: "client-first with another authorization id", clientFirst: func(t *testing.T) (*xdg.ClientConversation, string) {
			return nil, "n,a=admin,n=app,r=abcdef"
		}, why: "authorization id differs"},
		{name: "client-first with a mandatory extension", clientFirst: func(t *testing.T) (*xdg.ClientConversation, string) {
			return nil, "n,,m=ext,n=app,r=abcdef"
		}, why: "malformed client-first message"},
		{name: "delegation-token login", clientFirst: func(t *testing.T) (*xdg.ClientConversation, string) {
			return nil, "n,,n=app,r=abcdef,tokenauth=true"
		}, why: "tokenauth=true"},
		{name: "client-final with a wrong nonce", clientFirst: func(t *testing.T) (*xdg.ClientConversation, string) { return first(t, appUser) },
			final: func(t *testing.T, conv *xdg.ClientConversation, sf []byte) string {
				return finalOf(t, conv, sf, func(m string) string { return replace(m, "r", field(m, "r")+"x") })
			}, why: "nonce is not the one the server sent"},
		{name: "client-final with a proof in bad base64", clientFirst: func(t *testing.T) (*xdg.ClientConversation, string) { return first(t, appUser) },
			final: func(t *testing.T, conv *xdg.ClientConversation, sf []byte) string {
				return finalOf(t, conv, sf, func(m string) string { return replace(m, "p", "!!not base64!!") })
			}, why: "malformed client-final message"},
		{name: "client-final with a short proof", clientFirst: func(t *testing.T) (*xdg.ClientConversation, string) { return first(t, appUser) },
			final: func(t *testing.T, conv *xdg.ClientConversation, sf []byte) string {
				return finalOf(t, conv, sf, func(m string) string { return replace(m, "p", base64.StdEncoding.EncodeToString([]byte("short"))) })
			}, why: "malformed client-final message"},
		{name: "client-final with bad channel binding", clientFirst: func(t *testing.T) (*xdg.ClientConversation, string) { return first(t, appUser) },
			final: func(t *testing.T, conv *xdg.ClientConversation, sf []byte) string {
				return finalOf(t, conv, sf, func(m string) string { return replace(m, "c", "!!!") })
			}, why: "malformed client-final message"},
		{name: "client-final with a wrong proof", clientFirst: func(t *testing.T) (*xdg.ClientConversation, string) {
			conv := scramClient(t, xdg.SHA256, appUser, "guess")
			msg, err := conv.Step("")
			require.NoError(t, err)
			return conv, msg
		}, final: func(t *testing.T, conv *xdg.ClientConversation, sf []byte) string {
			return finalOf(t, conv, sf, func(m string) string { return m })
		}, why: `wrong password for user "app"`},
		{name: "client-final garbage", clientFirst: func(t *testing.T) (*xdg.ClientConversation, string) { return first(t, appUser) },
			final: func(t *testing.T, _ *xdg.ClientConversation, _ []byte) string { return "garbage" },
			why:   "malformed client-final message"},
		{name: "huge token", clientFirst: func(t *testing.T) (*xdg.ClientConversation, string) {
			return nil, "n,,n=app,r=" + strings.Repeat("x", 10<<10)
		}, why: "over the broker's 8192-byte limit"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := scramHandshake(t, k.Addr(), mech)
			conv, msg := tc.clientFirst(t)
			resp := saslAuthenticate(t, c, msg, 2)
			if tc.final != nil {
				require.Zero(t, resp.ErrorCode, "the client-first message is good")
				resp = saslAuthenticate(t, c, tc.final(t, conv, resp.SASLAuthBytes), 3)
			}
			assert.Equal(t, kerr.SaslAuthenticationFailed.Code, resp.ErrorCode)
			require.NotNil(t, resp.ErrorMessage)
			assert.Equal(t, kafkaMessage, *resp.ErrorMessage)
			assertClosed(t, c)
			rec, ok := findRequest(k.Broker(), kmsg.SASLAuthenticate, func(r broker.RequestRecord) bool {
				return r.Closed && strings.Contains(r.Denied, tc.why)
			})
			assert.True(t, ok, "the request log says why: %q", tc.why)
			assert.NotContains(t, rec.Denied, appPass)
			produceSync(t, healthy, &kgo.Record{Topic: "ok", Value: []byte{byte(i)}})
		})
	}

	t.Run("a replayed client-final message", func(t *testing.T) {
		c := scramHandshake(t, k.Addr(), mech)
		conv, msg := first(t, appUser)
		sf := saslAuthenticate(t, c, msg, 2)
		require.Zero(t, sf.ErrorCode)
		final := finalOf(t, conv, sf.SASLAuthBytes, func(m string) string { return m })
		sfinal := saslAuthenticate(t, c, final, 3)
		require.Zero(t, sfinal.ErrorCode)
		_, err := conv.Step(string(sfinal.SASLAuthBytes))
		require.NoError(t, err, "logged in")

		// On the same connection: it is authenticated already.
		again := saslAuthenticate(t, c, final, 4)
		assert.Equal(t, kerr.IllegalSaslState.Code, again.ErrorCode)

		// On a new connection: the server's nonce is new, so the
		// captured message proves nothing.
		c2 := scramHandshake(t, k.Addr(), mech)
		_, msg2 := first(t, appUser)
		require.Zero(t, saslAuthenticate(t, c2, msg2, 2).ErrorCode)
		replayed := saslAuthenticate(t, c2, final, 3)
		assert.Equal(t, kerr.SaslAuthenticationFailed.Code, replayed.ErrorCode)
		assertClosed(t, c2)

		// Replaying the whole captured exchange on a new connection
		// fails the same way: the server-first nonce differs.
		c3 := scramHandshake(t, k.Addr(), mech)
		require.Zero(t, saslAuthenticate(t, c3, msg, 2).ErrorCode)
		assert.Equal(t, kerr.SaslAuthenticationFailed.Code, saslAuthenticate(t, c3, final, 3).ErrorCode)
		assertClosed(t, c3)
	})
	assert.Len(t, k.Records("ok", 0), len(cases))
}

// saltedPassword is RFC 5802's Hi(password, salt, iterations).
func saltedPassword(t *testing.T, h func() hash.Hash, pass string, salt []byte, iterations int) []byte {
	out, err := pbkdf2.Key(h, pass, salt, iterations, h().Size())
	require.NoError(t, err)
	return out
}

// TestSCRAMCredentialAdmin describes and alters SCRAM credentials through
// kadm and by hand: the configured users have both mechanisms at 4096
// iterations, an upserted user logs in, a deleted credential no longer
// does, and bad alterations get Kafka's errors.
func TestSCRAMCredentialAdmin(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Profile("kafka"), fixtures.Topic("orders", 1),
		fixtures.User(adminUser, adminPass), fixtures.User(appUser, appPass))
	adm := k.Admin()

	described, err := adm.DescribeUserSCRAMs(ctxT(t))
	require.NoError(t, err)
	require.NoError(t, described.Error())
	require.Len(t, described, 2)
	for _, u := range []string{adminUser, appUser} {
		require.Contains(t, described, u)
		got := map[kadm.ScramMechanism]int32{}
		for _, ci := range described[u].CredInfos {
			got[ci.Mechanism] = ci.Iterations
		}
		assert.Equal(t, map[kadm.ScramMechanism]int32{kadm.ScramSha256: 4096, kadm.ScramSha512: 4096}, got, u)
	}

	// kadm salts the password client-side, as the Java admin does.
	altered, err := adm.AlterUserSCRAMs(ctxT(t), nil, []kadm.UpsertSCRAM{
		{User: "newcomer", Mechanism: kadm.ScramSha512, Iterations: 8192, Password: "newcomer-secret"},
	})
	require.NoError(t, err)
	require.NoError(t, altered.Error())
	produceSync(t, newClient(t, k.Addr(), scramOpt("newcomer", "newcomer-secret", 512)), &kgo.Record{Topic: "orders", Value: []byte("newcomer")})
	_, err = kadm.NewClient(newClient(t, k.Addr(), scramOpt("newcomer", "newcomer-secret", 256), kgo.RequestRetries(0))).ListTopics(shortCtx(t))
	assert.ErrorIs(t, err, kerr.SaslAuthenticationFailed, "no SCRAM-SHA-256 credential was set")
	_, err = kadm.NewClient(newClient(t, k.Addr(), saslOpt("newcomer", "newcomer-secret"), kgo.RequestRetries(0))).ListTopics(shortCtx(t))
	assert.ErrorIs(t, err, kerr.SaslAuthenticationFailed, "SCRAM credentials are not PLAIN users")

	// A salted password given by hand, as kafka-configs.sh does.
	salt := []byte("a salt of my own")
	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	up := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
	up.Name, up.Mechanism, up.Iterations, up.Salt = "by-hand", 1, 4096, salt
	up.SaltedPassword = saltedPassword(t, sha256.New, "by-hand-secret", salt, 4096)
	req.Upsertions = append(req.Upsertions, up)
	resp, err := req.RequestWith(ctxT(t), k.Client())
	require.NoError(t, err)
	require.Len(t, resp.Results, 1)
	require.Zero(t, resp.Results[0].ErrorCode)
	produceSync(t, newClient(t, k.Addr(), scramOpt("by-hand", "by-hand-secret", 256)), &kgo.Record{Topic: "orders", Value: []byte("by-hand")})

	// Deleting app's SCRAM-SHA-256 credential leaves its PLAIN login.
	deleted, err := adm.AlterUserSCRAMs(ctxT(t), []kadm.DeleteSCRAM{{User: appUser, Mechanism: kadm.ScramSha256}}, nil)
	require.NoError(t, err)
	require.NoError(t, deleted.Error())
	_, err = kadm.NewClient(newClient(t, k.Addr(), scramOpt(appUser, appPass, 256), kgo.RequestRetries(0))).ListTopics(shortCtx(t))
	assert.ErrorIs(t, err, kerr.SaslAuthenticationFailed)
	produceSync(t, k.ClientAs(appUser, appPass), &kgo.Record{Topic: "orders", Value: []byte("plain")})

	t.Run("bad alterations", func(t *testing.T) {
		salted := saltedPassword(t, sha512.New, "x", salt, 4096)
		req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
		upsert := func(name string, mech int8, iterations int32, salt, salted []byte) {
			up := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
			up.Name, up.Mechanism, up.Iterations, up.Salt, up.SaltedPassword = name, mech, iterations, salt, salted
			req.Upsertions = append(req.Upsertions, up)
		}
		del := func(name string, mech int8) {
			d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
			d.Name, d.Mechanism = name, mech
			req.Deletions = append(req.Deletions, d)
		}
		del("nobody", 1)
		del("weird-mechanism-delete", 3)
		del("twice", 2)
		upsert("twice", 2, 4096, salt, salted)
		upsert("too-few", 2, 4095, salt, salted)
		upsert("too-many", 2, 16385, salt, salted)
		upsert("empty-salt", 2, 4096, nil, salted)
		upsert("empty-salted-password", 2, 4096, salt, nil)
		upsert("huge-salt", 2, 4096, make([]byte, 2000), salted)
		upsert("unknown-mechanism", 0, 4096, salt, salted)
		upsert("", 2, 4096, salt, salted)
		upsert("fine", 2, 16384, salt, salted)
		resp, err := req.RequestWith(ctxT(t), k.Client())
		require.NoError(t, err)
		got := map[string]string{}
		for _, r := range resp.Results {
			msg := ""
			if r.ErrorMessage != nil {
				msg = *r.ErrorMessage
			}
			got[r.User] = "ok"
			if r.ErrorCode != 0 {
				got[r.User] = kerr.ErrorForCode(r.ErrorCode).Error() + ": " + msg
			}
		}
		assert.Equal(t, map[string]string{
			"nobody":                 kerr.ResourceNotFound.Error() + ": Attempt to delete a user credential that does not exist",
			"weird-mechanism-delete": kerr.UnsupportedSaslMechanism.Error() + ": Unknown SCRAM mechanism",
			"twice":                  kerr.DuplicateResource.Error() + ": A user credential cannot be altered twice in the same request",
			"too-few":                kerr.UnacceptableCredential.Error() + ": Too few iterations",
			"too-many":               kerr.UnacceptableCredential.Error() + ": Too many iterations",
			"empty-salt":             kerr.UnacceptableCredential.Error() + ": Salt must not be empty",
			"empty-salted-password":  kerr.UnacceptableCredential.Error() + ": Salted password must not be empty",
			"huge-salt":              kerr.UnacceptableCredential.Error() + ": Salt is over the broker's 1024-byte limit",
			"unknown-mechanism":      kerr.UnsupportedSaslMechanism.Error() + ": Unknown SCRAM mechanism",
			"":                       kerr.UnacceptableCredential.Error() + ": Username must not be empty",
			"fine":                   "ok",
		}, got)
		described, err := adm.DescribeUserSCRAMs(ctxT(t), "too-few", "fine", "twice")
		require.NoError(t, err)
		assert.ErrorIs(t, described["too-few"].Err, kerr.ResourceNotFound, "a refused upsertion stores nothing")
		assert.ErrorIs(t, described["twice"].Err, kerr.ResourceNotFound)
		require.NoError(t, described["fine"].Err)
		assert.Equal(t, int32(16384), described["fine"].CredInfos[0].Iterations)
	})

	t.Run("describe a user twice, or one without credentials", func(t *testing.T) {
		req := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
		for _, u := range []string{adminUser, adminUser, "nobody"} {
			ru := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
			ru.Name = u
			req.Users = append(req.Users, ru)
		}
		resp, err := req.RequestWith(ctxT(t), k.Client())
		require.NoError(t, err)
		require.Len(t, resp.Results, 2)
		assert.Equal(t, kerr.DuplicateResource.Code, resp.Results[0].ErrorCode)
		assert.Empty(t, resp.Results[0].CredentialInfos)
		assert.Equal(t, kerr.ResourceNotFound.Code, resp.Results[1].ErrorCode)
	})
}

// TestSCRAMStoredKeys checks the credential a salted password makes
// against RFC 5802's derivation, through a login: the broker can only
// verify a proof if its stored key is H(HMAC(SaltedPassword, "Client
// Key")).
func TestSCRAMStoredKeys(t *testing.T) {
	t.Parallel()
	salt := []byte("salt")
	sp := saltedPassword(t, sha256.New, "pw", salt, 4096)
	mac := hmac.New(sha256.New, sp)
	mac.Write([]byte("Client Key"))
	clientKey := mac.Sum(nil)
	stored := sha256.Sum256(clientKey)
	cl, err := xdg.SHA256.NewClientUnprepped("u", "pw", "")
	require.NoError(t, err)
	creds := cl.GetStoredCredentials(xdg.KeyFactors{Salt: string(salt), Iters: 4096})
	assert.Equal(t, stored[:], creds.StoredKey, "xdg-go's client derives the same stored key")
}

// TestSCRAMInVASTAndAudit: VAST offers PLAIN only, so a SCRAM handshake is
// refused with the mechanisms VAST offers, and the request log names the
// rule and its action; the audit profile serves SCRAM and records a finding
// with advice in kgo's terms.
func TestSCRAMInVASTAndAudit(t *testing.T) {
	t.Parallel()
	t.Run("vast", func(t *testing.T) {
		k := fixtures.Start(t, fixtures.Topic("orders", 1), fixtures.User(appUser, appPass))
		cl := newClient(t, k.Addr(), scramOpt(appUser, appPass, 512), kgo.RequestRetries(0))
		_, err := kadm.NewClient(cl).ListTopics(shortCtx(t))
		require.ErrorIs(t, err, kerr.UnsupportedSaslMechanism)

		c := dialRaw(t, k.Addr())
		h := kmsg.NewPtrSASLHandshakeRequest()
		h.Mechanism = "SCRAM-SHA-256"
		resp := kmsg.NewPtrSASLHandshakeResponse()
		roundTrip(t, c, 1, h, resp, 1)
		assert.Equal(t, kerr.UnsupportedSaslMechanism.Code, resp.ErrorCode)
		assert.Equal(t, []string{"PLAIN"}, resp.SupportedMechanisms, "the mechanisms VAST offers")
		assertClosed(t, c)

		rec, ok := findRequest(k.Broker(), kmsg.SASLHandshake, func(r broker.RequestRecord) bool { return r.Rule != "" })
		require.True(t, ok, "the refusal is in the request log")
		assert.Equal(t, "PlainSASLOnly", rec.Rule)
		assert.True(t, rec.Closed)
		assert.Equal(t, "VAST offers SASL/PLAIN only, not SCRAM-SHA-256 (rule PlainSASLOnly): use SASL/PLAIN over TLS", rec.Message)
		k.AssertRefused("PlainSASLOnly")

		versions, err := kadm.NewClient(k.ClientAs(appUser, appPass)).ApiVersions(ctxT(t))
		require.NoError(t, err)
		for _, v := range versions {
			_, ok := v.KeyMaxVersion(int16(kmsg.DescribeUserSCRAMCredentials))
			assert.False(t, ok, "VAST does not advertise DescribeUserScramCredentials")
			_, ok = v.KeyMaxVersion(int16(kmsg.AlterUserSCRAMCredentials))
			assert.False(t, ok)
		}
	})
	t.Run("audit", func(t *testing.T) {
		k := fixtures.Start(t, fixtures.Audit(), fixtures.Topic("orders", 1), fixtures.User(appUser, appPass))
		produceSync(t, newClient(t, k.Addr(), scramOpt(appUser, appPass, 512)), &kgo.Record{Topic: "orders", Value: []byte("audited")})
		var found *broker.Finding
		for _, f := range k.Broker().Findings() {
			if f.Rule == rules.PlainSASLOnly.String() {
				found = &f
			}
		}
		require.NotNil(t, found, "SCRAM is a finding of PlainSASLOnly")
		assert.Equal(t, "refused", found.Kind)
		assert.Equal(t, "SASLHandshake", found.API)
		assert.Contains(t, found.Detail, "SCRAM-SHA-512")
		assert.Contains(t, found.Advice, "plain.Auth", "kgo's terms")
		k.WaitRecords("orders", 0, "audited")
	})
}
