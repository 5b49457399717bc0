package control_test

import (
	"context"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"hash"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	xdg "github.com/xdg-go/scram"

	"github.com/vastfake/vastfake/broker"
	"github.com/vastfake/vastfake/control"
	"github.com/vastfake/vastfake/fixtures"
)

// lockedBuffer is a log sink the broker's goroutines write to.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.WriteString(string(p))
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// scramKeys is what a SCRAM credential is made of, for one mechanism.
func scramKeys(h func() hash.Hash, pass string, salt []byte, iterations int) (salted, stored, server []byte) {
	salted, err := pbkdf2.Key(h, pass, salt, iterations, h().Size())
	if err != nil {
		panic(err)
	}
	mac := func(msg string) []byte {
		m := hmac.New(h, salted)
		m.Write([]byte(msg))
		return m.Sum(nil)
	}
	d := h()
	d.Write(mac("Client Key"))
	return salted, d.Sum(nil), mac("Server Key")
}

// TestNoSecretInAnyOutput logs in every way there is, right and wrong,
// alters SCRAM credentials, then reads every output a user sees: the
// server log at debug level, every GET route of the control plane and the
// audit report in Markdown and JSON. None holds a password, a salted
// password or a key, in any encoding.
func TestNoSecretInAnyOutput(t *testing.T) {
	const user, pass = "app", "Pa55-very-secret-word"
	const wrong, plainWrong, altered = "Wr0ng-guess-of-a-word", "Pl4in-wrong-guess", "Alt3red-secret-word"
	logs := &lockedBuffer{}
	k := fixtures.Start(t, fixtures.Audit(), fixtures.Topic("orders", 1), fixtures.User(user, pass),
		fixtures.BrokerOptions(broker.WithLogger(slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))))
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()

	var secrets [][]byte
	for _, s := range []string{pass, wrong, plainWrong, altered} {
		secrets = append(secrets, []byte(s))
	}
	// The credentials derived for the configured user, read back from the
	// salt and iteration count its server-first messages carry.
	for _, m := range []struct {
		name string
		h    func() hash.Hash
		gen  xdg.HashGeneratorFcn
	}{{"SCRAM-SHA-256", sha256.New, xdg.SHA256}, {"SCRAM-SHA-512", sha512.New, xdg.SHA512}} {
		cl := saslClient(t, k, scramAuth(m.name, user, pass))
		require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte(m.name)}).FirstErr())
		salt, iterations := serverFirst(t, k.Addr(), m.name, m.gen, user)
		salted, stored, server := scramKeys(m.h, pass, salt, iterations)
		secrets = append(secrets, salted, stored, server)

		bad := saslClient(t, k, scramAuth(m.name, user, wrong), kgo.RequestRetries(0))
		_, err := kadm.NewClient(bad).ListTopics(ctx)
		require.Error(t, err)
	}
	require.NoError(t, k.ClientAs(user, pass).ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("plain")}).FirstErr())
	bad := saslClient(t, k, plain.Auth{User: user, Pass: plainWrong}.AsMechanism(), kgo.RequestRetries(0))
	_, err := kadm.NewClient(bad).ListTopics(ctx)
	require.Error(t, err)

	// A credential altered with a salted password the test knows.
	salt := []byte("a known salt")
	salted, stored, server := scramKeys(sha512.New, altered, salt, 8192)
	secrets = append(secrets, salted, stored, server)
	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	up := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
	up.Name, up.Mechanism, up.Iterations, up.Salt, up.SaltedPassword = "altered", 2, 8192, salt, salted
	req.Upsertions = append(req.Upsertions, up)
	resp, err := req.RequestWith(ctx, k.Client())
	require.NoError(t, err)
	require.Zero(t, resp.Results[0].ErrorCode)
	altCl := saslClient(t, k, scram.Auth{User: "altered", Pass: altered}.AsSha512Mechanism())
	require.NoError(t, altCl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("altered")}).FirstErr())
	_, err = kadm.NewClient(k.Client()).DescribeUserSCRAMs(ctx)
	require.NoError(t, err)

	outputs := map[string]string{}
	url := serve(t, k)
	for _, pattern := range control.Routes() {
		method, path, _ := strings.Cut(pattern, " ")
		if method != "GET" {
			continue
		}
		path = strings.NewReplacer("{$}", "", "{name}", "orders", "{p}", "0", "{id}", "none").Replace(path)
		if strings.HasPrefix(path, "/groups/") {
			path = "/groups/none"
		}
		rq, err := http.NewRequestWithContext(ctx, "GET", url+path, nil)
		require.NoError(t, err)
		r, err := http.DefaultClient.Do(rq)
		require.NoError(t, err)
		body, err := io.ReadAll(r.Body)
		r.Body.Close()
		require.NoError(t, err)
		outputs["GET "+path+" ("+strconv.Itoa(r.StatusCode)+")"] = string(body)
	}
	report := k.Broker().AuditReport()
	outputs["audit report (Markdown)"] = report.Markdown()
	js, err := json.Marshal(report)
	require.NoError(t, err)
	outputs["audit report (JSON)"] = string(js)
	js, err = json.Marshal(k.Broker().Requests())
	require.NoError(t, err)
	outputs["Requests()"] = string(js)
	outputs["server log"] = logs.String()
	require.Contains(t, outputs["server log"], "wrong password", "the log records the failed logins")
	require.Contains(t, outputs["audit report (Markdown)"], "PlainSASLOnly", "the report has the SCRAM finding")

	for _, s := range secrets {
		forms := []string{string(s), base64.StdEncoding.EncodeToString(s), base64.RawStdEncoding.EncodeToString(s),
			base64.URLEncoding.EncodeToString(s), hex.EncodeToString(s), strings.ToUpper(hex.EncodeToString(s))}
		if js, err := json.Marshal(s); err == nil {
			forms = append(forms, string(js))
		}
		for name, out := range outputs {
			for _, f := range forms {
				if strings.Contains(out, f) {
					t.Errorf("%s holds a secret (%q)", name, f)
				}
			}
		}
	}
	http.DefaultClient.CloseIdleConnections()
}

// saslClient is a kgo client of k that logs in with m alone.
func saslClient(t *testing.T, k *fixtures.Kafka, m sasl.Mechanism, opts ...kgo.Opt) *kgo.Client {
	cl, err := kgo.NewClient(append(append(fixtures.ClientOpts(k.Addr()), kgo.SASL(m)), opts...)...)
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

// scramAuth is kgo's SCRAM mechanism of name.
func scramAuth(name, user, pass string) sasl.Mechanism {
	if name == "SCRAM-SHA-512" {
		return scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()
	}
	return scram.Auth{User: user, Pass: pass}.AsSha256Mechanism()
}

// serverFirst starts a SCRAM login by hand and returns the salt and
// iteration count of user's credential from the server-first message.
func serverFirst(t *testing.T, addr, mech string, gen xdg.HashGeneratorFcn, user string) ([]byte, int) {
	c, err := net.DialTimeout("tcp", addr, deadline)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(deadline)))
	exchange := func(req kmsg.Request, resp kmsg.Response, corr int32) {
		req.SetVersion(1)
		_, err := c.Write(kmsg.NewRequestFormatter().AppendRequest(nil, req, corr))
		require.NoError(t, err)
		var size [4]byte
		_, err = io.ReadFull(c, size[:])
		require.NoError(t, err)
		body := make([]byte, binary.BigEndian.Uint32(size[:]))
		_, err = io.ReadFull(c, body)
		require.NoError(t, err)
		resp.SetVersion(1)
		require.NoError(t, resp.ReadFrom(body[4:]))
	}
	h := kmsg.NewPtrSASLHandshakeRequest()
	h.Mechanism = mech
	exchange(h, kmsg.NewPtrSASLHandshakeResponse(), 1)
	cl, err := gen.NewClientUnprepped(user, "unused", "")
	require.NoError(t, err)
	first, err := cl.NewConversation().Step("")
	require.NoError(t, err)
	a := kmsg.NewPtrSASLAuthenticateRequest()
	a.SASLAuthBytes = []byte(first)
	resp := kmsg.NewPtrSASLAuthenticateResponse()
	exchange(a, resp, 2)
	require.Zero(t, resp.ErrorCode)
	var salt []byte
	iterations := 0
	for _, f := range strings.Split(string(resp.SASLAuthBytes), ",") {
		switch {
		case strings.HasPrefix(f, "s="):
			salt, err = base64.StdEncoding.DecodeString(f[2:])
			require.NoError(t, err)
		case strings.HasPrefix(f, "i="):
			iterations, err = strconv.Atoi(f[2:])
			require.NoError(t, err)
		}
	}
	require.NotEmpty(t, salt)
	return salt, iterations
}
