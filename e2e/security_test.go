package e2e_test

// Security end to end: SASL/PLAIN through franz-go (v1 and v0 handshakes),
// wrong and missing credentials, brute input on the SASL path over raw TCP,
// every identity-policy denial as the client surfaces it, default deny, and
// a TLS listener.

import (
	"context"
	"encoding/binary"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	"github.com/vastfake/vastfake/broker"
	"github.com/vastfake/vastfake/fixtures"
	"github.com/vastfake/vastfake/internal/testutil"
)

// saslOpt authenticates a kgo client with SASL/PLAIN.
func saslOpt(user, pass string) kgo.Opt {
	return kgo.SASL(plain.Auth{User: user, Pass: pass}.AsMechanism())
}

// shortCtx bounds a call that the broker is expected to refuse, so that a
// client retrying a closed connection gives up.
func shortCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestSASLPlain(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Topic("orders", 1),
		fixtures.User(adminUser, adminPass), fixtures.User(appUser, appPass))
	b := k.Broker()

	t.Run("v1 handshake then SaslAuthenticate", func(t *testing.T) {
		cl := k.ClientAs(appUser, appPass)
		produceSync(t, cl, &kgo.Record{Topic: "orders", Value: []byte("v1")})
		rec, ok := findRequest(b, kmsg.Produce, func(r broker.RequestRecord) bool { return r.User == appUser })
		require.True(t, ok, "the request log names the user")
		assert.Zero(t, rec.ErrorCode)
		_, ok = findRequest(b, kmsg.SASLAuthenticate, func(r broker.RequestRecord) bool { return r.User == appUser && r.Version >= 0 })
		assert.True(t, ok, "SaslAuthenticate logged")
	})

	t.Run("v0 handshake then a raw token", func(t *testing.T) {
		// franz-go always uses v1 when the broker offers it; the
		// interop module drives v0 through sarama. Here by hand:
		c := dialRaw(t, k.Addr())
		h := kmsg.NewPtrSASLHandshakeRequest()
		h.Mechanism = "PLAIN"
		hresp := kmsg.NewPtrSASLHandshakeResponse()
		roundTrip(t, c, 0, h, hresp, 1)
		require.Zero(t, hresp.ErrorCode)
		assert.Equal(t, []string{"PLAIN"}, hresp.SupportedMechanisms)
		token := []byte("\x00app\x00app-secret")
		_, err := c.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(token))), token...))
		require.NoError(t, err)
		assert.Empty(t, readFrame(t, c), "an empty raw challenge: authenticated")
		md := kmsg.NewPtrMetadataRequest()
		mresp := kmsg.NewPtrMetadataResponse()
		roundTrip(t, c, 9, md, mresp, 2)
		require.Len(t, mresp.Topics, 1)
		_, ok := findRequest(b, kmsg.SASLAuthenticate, func(r broker.RequestRecord) bool { return r.User == appUser && r.Version == -1 && !r.Closed })
		assert.True(t, ok, "the raw token is logged as SaslAuthenticate version -1")
		rec, ok := findRequest(b, kmsg.Metadata, func(r broker.RequestRecord) bool { return r.User == appUser })
		require.True(t, ok)
		assert.Zero(t, rec.ErrorCode)
	})

	t.Run("wrong password", func(t *testing.T) {
		cl := newClient(t, k.Addr(), saslOpt(appUser, "not-the-password"), kgo.RequestRetries(0))
		_, err := kadm.NewClient(cl).ListTopics(shortCtx(t))
		require.ErrorIs(t, err, kerr.SaslAuthenticationFailed)
		assert.Contains(t, err.Error(), "Invalid username or password", "the broker's message reaches the client")
		rec, ok := findRequest(b, kmsg.SASLAuthenticate, func(r broker.RequestRecord) bool { return r.Closed })
		require.True(t, ok)
		assert.Equal(t, kerr.SaslAuthenticationFailed.Code, rec.ErrorCode)
		assert.Contains(t, rec.Denied, `wrong password for user "app"`)
	})

	t.Run("unknown user", func(t *testing.T) {
		cl := newClient(t, k.Addr(), saslOpt("mallory", appPass), kgo.RequestRetries(0))
		_, err := kadm.NewClient(cl).ListTopics(shortCtx(t))
		require.ErrorIs(t, err, kerr.SaslAuthenticationFailed)
	})

	t.Run("unauthenticated access closes the connection", func(t *testing.T) {
		cl := newClient(t, k.Addr(), kgo.RequestRetries(0))
		_, err := kadm.NewClient(cl).ListTopics(shortCtx(t))
		require.Error(t, err)
		rec, ok := findRequest(b, kmsg.Metadata, func(r broker.RequestRecord) bool { return r.Closed })
		require.True(t, ok, "the refused request is logged")
		assert.Contains(t, rec.Denied, "SASL authentication required")
		assert.Empty(t, rec.User)
	})

	t.Run("another mechanism", func(t *testing.T) {
		cl := newClient(t, k.Addr(), kgo.RequestRetries(0),
			kgo.SASL(scram.Auth{User: appUser, Pass: appPass}.AsSha256Mechanism()))
		_, err := kadm.NewClient(cl).ListTopics(shortCtx(t))
		require.ErrorIs(t, err, kerr.UnsupportedSaslMechanism)
	})

	t.Run("SASL against a listener without users", func(t *testing.T) {
		open := fixtures.StartBroker(t)
		cl := newClient(t, open.Addr(), saslOpt(appUser, appPass), kgo.RequestRetries(0))
		_, err := kadm.NewClient(cl).ListTopics(shortCtx(t))
		require.ErrorIs(t, err, kerr.IllegalSaslState)
	})

	k.WaitRecords("orders", 0, "v1")
}

// TestSASLBruteInput sends garbage, huge and truncated input on the SASL
// path; each closes its own connection while an authenticated client keeps
// producing.
func TestSASLBruteInput(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Topic("ok", 1), fixtures.User(appUser, appPass))
	healthy := k.Client()
	produceSync(t, healthy, &kgo.Record{Topic: "ok", Value: []byte("before")})

	req := func(r kmsg.Request, version int16) []byte {
		r.SetVersion(version)
		return kmsg.NewRequestFormatter(kmsg.FormatterClientID("brute")).AppendRequest(nil, r, 1)
	}
	handshake := func(version int16) []byte {
		h := kmsg.NewPtrSASLHandshakeRequest()
		h.Mechanism = "PLAIN"
		return req(h, version)
	}
	authenticate := func(token []byte) []byte {
		a := kmsg.NewPtrSASLAuthenticateRequest()
		a.SASLAuthBytes = token
		return req(a, 1)
	}
	rawToken := func(size int32, token []byte) []byte {
		return append(binary.BigEndian.AppendUint32(nil, uint32(size)), token...)
	}
	huge := make([]byte, 600<<10)

	cases := []struct {
		name string
		// steps are written in order; when answers is set, the first
		// steps-1 writes each get an answer that is read and checked
		steps     [][]byte
		halfClose bool
	}{
		{name: "garbage first frame", steps: [][]byte{[]byte("\x00\x00\x00\x10garbage garbage!")}},
		{name: "huge first frame", steps: [][]byte{frame(int32(len(huge)), huge)}},
		{name: "metadata before authenticating", steps: [][]byte{req(kmsg.NewPtrMetadataRequest(), 9)}},
		{name: "SaslAuthenticate before a handshake", steps: [][]byte{authenticate([]byte("\x00app\x00app-secret"))}},
		{name: "v1: garbage token", steps: [][]byte{handshake(1), authenticate([]byte("garbage"))}},
		{name: "v1: empty token", steps: [][]byte{handshake(1), authenticate(nil)}},
		{name: "v1: huge token", steps: [][]byte{handshake(1), authenticate(huge)}},
		{name: "v1: authzid differs", steps: [][]byte{handshake(1), authenticate([]byte("root\x00app\x00app-secret"))}},
		{name: "v1: truncated SaslAuthenticate", steps: [][]byte{handshake(1), authenticate([]byte("\x00app\x00app-secret"))[:20]}, halfClose: true},
		{name: "v0: garbage token", steps: [][]byte{handshake(0), rawToken(7, []byte("garbage"))}},
		{name: "v0: negative size", steps: [][]byte{handshake(0), rawToken(-1, nil)}},
		{name: "v0: huge size", steps: [][]byte{handshake(0), rawToken(1<<30, []byte("x"))}},
		{name: "v0: truncated token", steps: [][]byte{handshake(0), rawToken(100, []byte("\x00app\x00app"))}, halfClose: true},
		{name: "v0: wrong password", steps: [][]byte{handshake(0), rawToken(9, []byte("\x00app\x00nope"))}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := dialRaw(t, k.Addr())
			for i, step := range tc.steps {
				if _, err := c.Write(step); err != nil {
					// The broker may close while a huge write is still
					// going out: that is the refusal under test.
					require.Equal(t, len(tc.steps)-1, i, "only the last step may be cut off: %v", err)
					break
				}
				if i < len(tc.steps)-1 { // a good handshake is answered
					body := readFrame(t, c)
					resp := kmsg.NewPtrSASLHandshakeResponse()
					resp.SetVersion(int16(binary.BigEndian.Uint16(step[8:10])))
					require.NoError(t, resp.ReadFrom(body[4:]))
					require.Zero(t, resp.ErrorCode)
				}
			}
			if tc.halfClose {
				require.NoError(t, c.(interface{ CloseWrite() error }).CloseWrite())
			}
			assertClosed(t, c)
			produceSync(t, healthy, &kgo.Record{Topic: "ok", Value: []byte(tc.name)})
		})
	}
	assert.Len(t, k.Records("ok", 0), len(cases)+1, "every record acknowledged around the bad input is there")

	// A wrong token in a well-formed SaslAuthenticate is answered before
	// the connection closes.
	c := dialRaw(t, k.Addr())
	roundTrip(t, c, 1, func() kmsg.Request {
		h := kmsg.NewPtrSASLHandshakeRequest()
		h.Mechanism = "PLAIN"
		return h
	}(), kmsg.NewPtrSASLHandshakeResponse(), 1)
	a := kmsg.NewPtrSASLAuthenticateRequest()
	a.SASLAuthBytes = []byte("garbage")
	resp := kmsg.NewPtrSASLAuthenticateResponse()
	roundTrip(t, c, 1, a, resp, 2)
	assert.Equal(t, kerr.SaslAuthenticationFailed.Code, resp.ErrorCode)
	require.NotNil(t, resp.ErrorMessage)
	assert.Contains(t, *resp.ErrorMessage, "Invalid SASL/PLAIN response")
	assertClosed(t, c)
}

// TestPolicyDenials denies the app user one action on one resource at a
// time and checks the error each API surfaces through franz-go, and that
// the request log names the policy and the user.
func TestPolicyDenials(t *testing.T) {
	t.Parallel()
	const view = "vastfake"
	topic := func(name string) string { return broker.TopicResource(view, name) }
	group := func(name string) string { return broker.GroupResource(view, name) }
	k := fixtures.Start(t,
		fixtures.Topic("orders", 1), fixtures.Topic("readonly", 1), fixtures.Topic("writeonly", 1),
		fixtures.Topic("secret", 1), fixtures.Topic("doomed", 1),
		fixtures.User(adminUser, adminPass), fixtures.User(appUser, appPass),
		fixtures.BrokerOptions(broker.WithPolicies(
			broker.Deny(appUser, broker.KafkaWrite, topic("readonly")),
			broker.Deny(appUser, broker.KafkaRead, topic("writeonly")),
			broker.Deny(appUser, broker.KafkaDescribe, topic("secret")),
			broker.Deny(appUser, broker.KafkaDelete, topic("orders")),
			broker.Deny(appUser, broker.KafkaCreate, topic("nocreate-*")),
			broker.Deny(appUser, broker.KafkaDescribeConfigs, topic("readonly")),
			broker.Deny(appUser, broker.KafkaAlterConfigs, topic("readonly")),
			broker.Deny(appUser, broker.KafkaDescribeConfigs, broker.ViewResource(view)),
			broker.Deny(appUser, broker.KafkaAlterConfigs, broker.ViewResource(view)),
			broker.Deny(appUser, broker.KafkaRead, group("forbidden")),
			broker.Deny(appUser, broker.KafkaDelete, group("keep")),
			broker.Deny(appUser, broker.KafkaDescribe, group("hidden")),
			// Deny beats allow.
			broker.Allow("*", broker.KafkaWrite, topic("*")),
		)))
	b := k.Broker()
	app := k.ClientAs(appUser, appPass)
	adm := kadm.NewClient(app)
	k.Produce("writeonly", 0, "w")
	k.Produce("secret", 0, "s")
	// Groups that exist, made by the admin: committed offsets, no members.
	for _, g := range []string{"forbidden", "keep", "hidden", "mine"} {
		_, err := k.Admin().CommitOffsets(ctxT(t), g, offsetsFor("orders", 0, 0))
		require.NoError(t, err)
	}

	// denied checks that the request log has a denial of api for the app
	// user that names policy.
	denied := func(t *testing.T, api kmsg.Key, policy string) {
		t.Helper()
		rec, ok := findRequest(b, api, func(r broker.RequestRecord) bool { return r.Denied != "" && r.User == appUser })
		require.True(t, ok, "a %s denial is logged", api)
		assert.Contains(t, rec.Denied, policy)
	}

	t.Run("Produce needs KafkaWrite on the topic", func(t *testing.T) {
		err := app.ProduceSync(ctxT(t), &kgo.Record{Topic: "readonly", Value: []byte("x")}).FirstErr()
		require.ErrorIs(t, err, kerr.TopicAuthorizationFailed)
		denied(t, kmsg.Produce, `"deny app KafkaWrite vast:kafka:topic:vastfake:readonly"`)
		produceSync(t, app, &kgo.Record{Topic: "orders", Value: []byte("allowed")})
	})

	t.Run("Fetch needs KafkaRead on the topic", func(t *testing.T) {
		cl := k.ClientAs(appUser, appPass, kgo.ConsumeTopics("writeonly"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		err := firstFetchError(t, cl)
		require.ErrorIs(t, err, kerr.TopicAuthorizationFailed)
		denied(t, kmsg.Fetch, "deny app KafkaRead vast:kafka:topic:vastfake:writeonly")
	})

	t.Run("Metadata hides a topic the user may not describe", func(t *testing.T) {
		topics, err := adm.ListTopics(ctxT(t))
		require.NoError(t, err)
		assert.False(t, topics.Has("secret"))
		assert.True(t, topics.Has("orders"))
		_, err = adm.ListTopics(ctxT(t), "secret")
		require.ErrorIs(t, err, kerr.TopicAuthorizationFailed, "kadm surfaces authorization errors as the call's *kadm.AuthError")
		var authErr *kadm.AuthError
		assert.ErrorAs(t, err, &authErr)
		denied(t, kmsg.Metadata, "deny app KafkaDescribe vast:kafka:topic:vastfake:secret")
	})

	t.Run("ListOffsets needs KafkaDescribe on the topic", func(t *testing.T) {
		req := kmsg.NewPtrListOffsetsRequest()
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "secret"
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Timestamp = -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		// Straight to the broker: kgo would first look the topic up in
		// Metadata, which already denies it.
		kresp, err := app.Broker(0).Request(ctxT(t), req)
		require.NoError(t, err)
		resp := kresp.(*kmsg.ListOffsetsResponse)
		require.ErrorIs(t, kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode), kerr.TopicAuthorizationFailed)
		denied(t, kmsg.ListOffsets, "KafkaDescribe vast:kafka:topic:vastfake:secret")
		_, err = adm.ListEndOffsets(ctxT(t), "secret")
		require.ErrorIs(t, err, kerr.TopicAuthorizationFailed)
	})

	t.Run("CreateTopics needs KafkaCreate", func(t *testing.T) {
		req := kmsg.NewPtrCreateTopicsRequest()
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "nocreate-1", 1, 1
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctxT(t), app)
		require.NoError(t, err)
		require.ErrorIs(t, kerr.ErrorForCode(resp.Topics[0].ErrorCode), kerr.TopicAuthorizationFailed)
		require.NotNil(t, resp.Topics[0].ErrorMessage)
		assert.Contains(t, *resp.Topics[0].ErrorMessage, "KafkaCreate", "the message names the action")
		_, err = adm.CreateTopic(ctxT(t), 1, 1, nil, "nocreate-2")
		require.ErrorIs(t, err, kerr.TopicAuthorizationFailed)
		denied(t, kmsg.CreateTopics, "deny app KafkaCreate vast:kafka:topic:vastfake:nocreate-*")
		created, err := adm.CreateTopic(ctxT(t), 1, 1, nil, "created-by-app")
		require.NoError(t, err)
		require.NoError(t, created.Err, "no matching policy: allowed")
	})

	t.Run("DeleteTopics needs KafkaDelete on the topic", func(t *testing.T) {
		_, err := adm.DeleteTopic(ctxT(t), "orders")
		require.ErrorIs(t, err, kerr.TopicAuthorizationFailed)
		denied(t, kmsg.DeleteTopics, "deny app KafkaDelete vast:kafka:topic:vastfake:orders")
		_, exists := b.Topic("orders")
		assert.True(t, exists)
		resp, err := adm.DeleteTopic(ctxT(t), "doomed")
		require.NoError(t, err)
		require.NoError(t, resp.Err)
	})

	t.Run("DescribeConfigs needs KafkaDescribeConfigs", func(t *testing.T) {
		_, err := adm.DescribeTopicConfigs(ctxT(t), "readonly")
		require.ErrorIs(t, err, kerr.TopicAuthorizationFailed)
		denied(t, kmsg.DescribeConfigs, "deny app KafkaDescribeConfigs vast:kafka:topic:vastfake:readonly")
		_, err = adm.DescribeBrokerConfigs(ctxT(t))
		require.ErrorIs(t, err, kerr.ClusterAuthorizationFailed, "broker configs need it on the view")
		denied(t, kmsg.DescribeConfigs, "deny app KafkaDescribeConfigs vast:kafka:view:vastfake")
	})

	t.Run("AlterConfigs and IncrementalAlterConfigs need KafkaAlterConfigs", func(t *testing.T) {
		set := []kadm.AlterConfig{{Name: "retention.ms", Value: kadm.StringPtr("60000")}}
		// kadm reports these per resource, not as the call's error.
		alterErr := func(rs kadm.AlterConfigsResponses, err error) error {
			require.NoError(t, err)
			require.Len(t, rs, 1)
			return rs[0].Err
		}
		require.ErrorIs(t, alterErr(adm.AlterTopicConfigs(ctxT(t), set, "readonly")), kerr.TopicAuthorizationFailed)
		denied(t, kmsg.IncrementalAlterConfigs, "deny app KafkaAlterConfigs vast:kafka:topic:vastfake:readonly")
		require.ErrorIs(t, alterErr(adm.AlterTopicConfigsState(ctxT(t), set, "readonly")), kerr.TopicAuthorizationFailed)
		denied(t, kmsg.AlterConfigs, "deny app KafkaAlterConfigs vast:kafka:topic:vastfake:readonly")
		require.ErrorIs(t, alterErr(adm.AlterBrokerConfigs(ctxT(t), set)), kerr.ClusterAuthorizationFailed)
		rs, err := adm.AlterTopicConfigs(ctxT(t), set, "orders")
		require.NoError(t, err)
		require.NoError(t, rs[0].Err)
	})

	t.Run("a group consumer needs KafkaRead on the group", func(t *testing.T) {
		cl := k.ClientAs(appUser, appPass, kgo.ConsumerGroup("forbidden"), kgo.ConsumeTopics("orders"))
		err := firstFetchError(t, cl)
		require.ErrorIs(t, err, kerr.GroupAuthorizationFailed)
		denied(t, kmsg.JoinGroup, "deny app KafkaRead vast:kafka:group:vastfake:forbidden")
	})

	t.Run("SyncGroup, Heartbeat and LeaveGroup need KafkaRead on the group", func(t *testing.T) {
		sync := kmsg.NewPtrSyncGroupRequest()
		sync.Group, sync.MemberID, sync.Generation = "forbidden", "m", 1
		sresp, err := sync.RequestWith(ctxT(t), app)
		require.NoError(t, err)
		assert.ErrorIs(t, kerr.ErrorForCode(sresp.ErrorCode), kerr.GroupAuthorizationFailed)
		denied(t, kmsg.SyncGroup, "forbidden")

		hb := kmsg.NewPtrHeartbeatRequest()
		hb.Group, hb.MemberID, hb.Generation = "forbidden", "m", 1
		hresp, err := hb.RequestWith(ctxT(t), app)
		require.NoError(t, err)
		assert.ErrorIs(t, kerr.ErrorForCode(hresp.ErrorCode), kerr.GroupAuthorizationFailed)
		denied(t, kmsg.Heartbeat, "forbidden")

		leave := kmsg.NewPtrLeaveGroupRequest()
		leave.Group = "forbidden"
		m := kmsg.NewLeaveGroupRequestMember()
		m.MemberID = "m"
		leave.Members = append(leave.Members, m)
		lresp, err := leave.RequestWith(ctxT(t), app)
		require.NoError(t, err)
		assert.ErrorIs(t, kerr.ErrorForCode(lresp.ErrorCode), kerr.GroupAuthorizationFailed)
		denied(t, kmsg.LeaveGroup, "forbidden")
	})

	t.Run("OffsetCommit needs KafkaRead on the group and the topic", func(t *testing.T) {
		rs, err := adm.CommitOffsets(ctxT(t), "forbidden", offsetsFor("orders", 0, 1))
		require.NoError(t, err)
		assert.ErrorIs(t, rs.Error(), kerr.GroupAuthorizationFailed)
		denied(t, kmsg.OffsetCommit, "forbidden")
		rs, err = adm.CommitOffsets(ctxT(t), "mine", offsetsFor("writeonly", 0, 1))
		require.NoError(t, err)
		assert.ErrorIs(t, rs.Error(), kerr.TopicAuthorizationFailed)
		denied(t, kmsg.OffsetCommit, "writeonly")
		rs, err = adm.CommitOffsets(ctxT(t), "mine", offsetsFor("orders", 0, 1))
		require.NoError(t, err)
		require.NoError(t, rs.Error())
	})

	t.Run("OffsetFetch needs KafkaRead on the group and the topic", func(t *testing.T) {
		_, err := adm.FetchOffsets(ctxT(t), "forbidden")
		require.ErrorIs(t, err, kerr.GroupAuthorizationFailed)
		denied(t, kmsg.OffsetFetch, "forbidden")
		_, err = k.Admin().CommitOffsets(ctxT(t), "mine", offsetsFor("writeonly", 0, 1))
		require.NoError(t, err)
		all, err := adm.FetchOffsets(ctxT(t), "mine")
		require.NoError(t, err)
		_, seen := all.Lookup("writeonly", 0)
		assert.False(t, seen, "a topic the user may not read is left out of all offsets")
		_, seen = all.Lookup("orders", 0)
		assert.True(t, seen)
		req := kmsg.NewPtrOffsetFetchRequest()
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = "mine"
		rt := kmsg.NewOffsetFetchRequestGroupTopic()
		rt.Topic, rt.Partitions = "writeonly", []int32{0}
		rg.Topics = append(rg.Topics, rt)
		req.Groups = append(req.Groups, rg)
		req.Group, req.Topics = "mine", []kmsg.OffsetFetchRequestTopic{{Topic: "writeonly", Partitions: []int32{0}}}
		resp, err := req.RequestWith(ctxT(t), app)
		require.NoError(t, err)
		p := resp.Groups[0].Topics[0].Partitions[0]
		assert.ErrorIs(t, kerr.ErrorForCode(p.ErrorCode), kerr.TopicAuthorizationFailed, "a named topic the user may not read")
		assert.Equal(t, int64(-1), p.Offset)
	})

	t.Run("DescribeGroups and ListGroups need KafkaDescribe on the group", func(t *testing.T) {
		_, err := adm.DescribeGroups(ctxT(t), "hidden")
		require.ErrorIs(t, err, kerr.GroupAuthorizationFailed)
		described, err := adm.DescribeGroups(ctxT(t), "mine")
		require.NoError(t, err)
		assert.NoError(t, described["mine"].Err)
		denied(t, kmsg.DescribeGroups, "deny app KafkaDescribe vast:kafka:group:vastfake:hidden")
		listed, err := adm.ListGroups(ctxT(t))
		require.NoError(t, err)
		assert.NotContains(t, listed.Groups(), "hidden")
		assert.Contains(t, listed.Groups(), "mine")
		assert.Contains(t, listed.Groups(), "forbidden", "KafkaRead denied does not deny KafkaDescribe")
	})

	t.Run("DeleteGroups needs KafkaDelete on the group", func(t *testing.T) {
		_, err := adm.DeleteGroup(ctxT(t), "keep")
		require.ErrorIs(t, err, kerr.GroupAuthorizationFailed)
		denied(t, kmsg.DeleteGroups, "deny app KafkaDelete vast:kafka:group:vastfake:keep")
		_, exists := b.Group("keep")
		assert.True(t, exists)
	})

	t.Run("the admin is not affected", func(t *testing.T) {
		k.Produce("readonly", 0, "admin may")
		resp, err := k.Admin().DeleteGroup(ctxT(t), "keep")
		require.NoError(t, err)
		require.NoError(t, resp.Err)
	})
}

// TestDefaultDeny lists exactly the permissions of the seed's consumer: a
// group needs KafkaRead on the topic and on the group, deleting it needs
// KafkaDelete on the group [000]; creating topics is granted on the view.
func TestDefaultDeny(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Topic("orders", 3),
		fixtures.User("ops", "ops-secret"), fixtures.User(appUser, appPass),
		fixtures.BrokerOptions(broker.WithDefaultDeny(true), broker.WithPolicies(
			broker.Allow(appUser, broker.KafkaWrite, "vast:kafka:topic:vastfake:orders"),
			broker.Allow(appUser, broker.KafkaRead, "vast:kafka:topic:vastfake:orders"),
			broker.Allow(appUser, broker.KafkaRead, "vast:kafka:group:vastfake:billing"),
			broker.Allow("ops", broker.KafkaCreate, "vast:kafka:view:vastfake"),
			broker.Allow("ops", broker.KafkaDelete, "vast:kafka:group:vastfake:*"),
		)))
	app := k.ClientAs(appUser, appPass)
	for i := 0; i < 6; i++ {
		produceSync(t, app, &kgo.Record{Topic: "orders", Partition: int32(i % 3), Value: []byte{byte('a' + i)}})
	}

	consumer := k.ClientAs(appUser, appPass, kgo.ConsumerGroup("billing"), kgo.ConsumeTopics("orders"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	pollN(t, consumer, 6)
	require.NoError(t, consumer.CommitUncommittedOffsets(ctxT(t)))
	consumer.Close()
	k.WaitGroup("billing", "Empty", 0)

	other := k.ClientAs(appUser, appPass, kgo.ConsumerGroup("other"), kgo.ConsumeTopics("orders"))
	require.ErrorIs(t, firstFetchError(t, other), kerr.GroupAuthorizationFailed)
	var joins []broker.RequestRecord
	for _, r := range k.Denials() {
		if r.API == kmsg.JoinGroup {
			joins = append(joins, r)
		}
	}
	require.NotEmpty(t, joins, "the fixture lists the denials")
	assert.Equal(t, appUser, joins[0].User)
	assert.Equal(t, "no policy allows app KafkaRead on vast:kafka:group:vastfake:other (default deny)", joins[0].Denied)

	appAdm := kadm.NewClient(app)
	_, err := appAdm.DeleteGroup(ctxT(t), "billing")
	assert.ErrorIs(t, err, kerr.GroupAuthorizationFailed, "KafkaRead does not grant KafkaDelete")
	_, err = appAdm.CreateTopic(ctxT(t), 1, 1, nil, "app-topic")
	assert.ErrorIs(t, err, kerr.TopicAuthorizationFailed)
	elect := kmsg.NewPtrElectLeadersRequest()
	elect.SetVersion(1) // v1+ carries the top-level error code
	electResp, err := elect.RequestWith(ctxT(t), app)
	require.NoError(t, err)
	assert.Equal(t, kerr.ClusterAuthorizationFailed.Code, electResp.ErrorCode, "ElectLeaders needs KafkaAlterConfigs on the view")

	ops := kadm.NewClient(k.ClientAs("ops", "ops-secret"))
	resp, err := ops.DeleteGroup(ctxT(t), "billing")
	require.NoError(t, err)
	require.NoError(t, resp.Err)
	created, err := ops.CreateTopic(ctxT(t), 1, 1, nil, "ops-topic")
	require.NoError(t, err)
	require.NoError(t, created.Err, "KafkaCreate on the view creates any topic")
	topics, err := ops.ListTopics(ctxT(t))
	require.NoError(t, err)
	assert.Empty(t, topics.Names(), "ops may describe no topic")
}

// TestPolicyValidation refuses policies that could never match anything.
func TestPolicyValidation(t *testing.T) {
	t.Parallel()
	for _, p := range []broker.Policy{
		{Effect: "maybe", User: "a", Action: broker.KafkaRead, Resource: "vast:kafka:topic:v:t"},
		{Effect: broker.EffectAllow, User: "", Action: broker.KafkaRead, Resource: "vast:kafka:topic:v:t"},
		{Effect: broker.EffectAllow, User: "a", Action: "Read", Resource: "vast:kafka:topic:v:t"},
		{Effect: broker.EffectAllow, User: "a", Action: broker.KafkaRead, Resource: "topic:t"},
	} {
		_, err := broker.New(broker.WithPolicies(p))
		assert.Error(t, err, "%v", p)
	}
	p, err := broker.ParsePolicy("deny * Kafka* vast:kafka:*")
	require.NoError(t, err)
	assert.Equal(t, broker.Deny("*", "Kafka*", "vast:kafka:*"), p)
	_, err = broker.ParsePolicy("deny alice KafkaRead")
	assert.Error(t, err)
}

// TestAnonymousPolicies applies policies on a listener without users: the
// principal is ANONYMOUS, and "*" matches it.
func TestAnonymousPolicies(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Topic("orders", 1), fixtures.Topic("audit", 1),
		fixtures.BrokerOptions(broker.WithPolicies(broker.Deny("*", broker.KafkaWrite, "vast:kafka:topic:vastfake:audit"))))
	cl := k.Client()
	produceSync(t, cl, &kgo.Record{Topic: "orders", Value: []byte("ok")})
	err := cl.ProduceSync(ctxT(t), &kgo.Record{Topic: "audit", Value: []byte("no")}).FirstErr()
	require.ErrorIs(t, err, kerr.TopicAuthorizationFailed)
	rec, ok := findRequest(k.Broker(), kmsg.Produce, func(r broker.RequestRecord) bool { return r.Denied != "" })
	require.True(t, ok)
	assert.Contains(t, rec.Denied, "denies ANONYMOUS KafkaWrite")
}

// TestTLS serves SASL_SSL with a self-signed certificate; a plaintext
// client gets no answer it can use.
func TestTLS(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Topic("orders", 1), fixtures.TLS(), fixtures.User(appUser, appPass))
	k.Produce("orders", 0, "over TLS")
	cl := k.Client(kgo.ConsumeTopics("orders"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := pollN(t, cl, 1)
	assert.Equal(t, "over TLS", string(got[0].Value))

	plaintext := newClient(t, k.Addr(), saslOpt(appUser, appPass), kgo.RequestRetries(0))
	_, err := kadm.NewClient(plaintext).ListTopics(shortCtx(t))
	assert.Error(t, err)
}

// TestTLSHandshakeTimeout: a connection to a TLS listener that does not
// finish its handshake in time is closed.
func TestTLSHandshakeTimeout(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.TLS(), fixtures.BrokerOptions(broker.WithTLSHandshakeTimeout(100*time.Millisecond)))
	assertClosed(t, dialRaw(t, k.Addr()))
	c := dialRaw(t, k.Addr())
	_, err := c.Write([]byte{0x16, 0x03, 0x01, 0x02, 0x00, 0x01}) // the start of a ClientHello
	require.NoError(t, err)
	assertClosed(t, c)
}

// TestLongNamesAreClippedInLogs: failed logins with huge user names and a
// huge client id leave short request-log entries and short log lines; a
// token over the SASL size cap is refused before it is parsed.
func TestLongNamesAreClippedInLogs(t *testing.T) {
	t.Parallel()
	var logs testutil.LockedBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	k := fixtures.Start(t, fixtures.User(appUser, appPass), fixtures.BrokerOptions(broker.WithLogger(logger)))
	for _, name := range []string{strings.Repeat("u", 500<<10), strings.Repeat("v", 6<<10)} {
		cl := newClient(t, k.Addr(), saslOpt(name, "pw"), kgo.RequestRetries(0))
		_, err := kadm.NewClient(cl).ListTopics(shortCtx(t))
		require.Error(t, err)
	}
	// kgo refuses client ids over 256 bytes; Kafka's limit is 32767.
	clientID := strings.Repeat("c", 30000)
	c := dialRaw(t, k.Addr())
	_, err := c.Write(kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID)).AppendRequest(nil, kmsg.NewPtrApiVersionsRequest(), 1))
	require.NoError(t, err)
	readFrame(t, c)
	r, ok := findRequest(k.Broker(), kmsg.ApiVersions, func(r broker.RequestRecord) bool { return r.ClientID != "kgo" })
	require.True(t, ok)
	assert.Equal(t, clientID[:256]+"…(30000 bytes)", r.ClientID)

	failed := 0
	for _, r := range k.Broker().Requests() {
		assert.LessOrEqual(t, len(r.ClientID), 300, "client id of %s", r.API)
		assert.LessOrEqual(t, len(r.User), 300, "user of %s", r.API)
		assert.LessOrEqual(t, len(r.Denied), 300, "denial of %s", r.API)
		if r.API == kmsg.SASLAuthenticate && r.ErrorCode == kerr.SaslAuthenticationFailed.Code {
			failed++
		}
	}
	assert.Equal(t, 2, failed, "failed logins")
	_, ok = findRequest(k.Broker(), kmsg.SASLAuthenticate, func(r broker.RequestRecord) bool {
		return r.User == "" && strings.Contains(r.Denied, "SASL token of 512004 bytes is over the broker's 8192-byte limit")
	})
	assert.True(t, ok, "the 500 KiB name is refused unparsed")
	_, ok = findRequest(k.Broker(), kmsg.SASLAuthenticate, func(r broker.RequestRecord) bool {
		return r.User == strings.Repeat("v", 256)+"…(6144 bytes)" && strings.HasSuffix(r.Denied, " bytes)")
	})
	assert.True(t, ok, "the 6 KiB name is clipped")

	lines := strings.Split(logs.String(), "\n")
	assert.Contains(t, logs.String(), "SASL/PLAIN: unknown user")
	for _, line := range lines {
		assert.LessOrEqual(t, len(line), 2000, "log line %.300s", line)
	}
}

// firstFetchError polls cl until a fetch error arrives and returns it.
func firstFetchError(t *testing.T, cl *kgo.Client) error {
	t.Helper()
	ctx := ctxT(t)
	for {
		fs := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "no fetch error arrived")
		for _, e := range fs.Errors() {
			if !errors.Is(e.Err, context.Canceled) && !strings.Contains(e.Err.Error(), "closed") {
				return e.Err
			}
		}
	}
}
