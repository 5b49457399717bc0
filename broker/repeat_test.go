package broker

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/vastfake/vastfake/clock"
)

// Repeated names, as a class (TestRepeatedNamesAreAnsweredOnce, heavy, in
// memory_test.go): every API of the table, every version at its ends, every
// array of its request at any depth. Each array is repeated repeatN times in
// an otherwise valid request, and the answer and what the broker allocates
// answering it must stay within a small constant of the answer to one copy:
// a name is answered once (merged, or refused with Kafka's error), never
// once per copy. The world and the requests built here serve it and
// TestEveryClientStringIsBounded; readFrame and roundTrip serve every raw
// test of the package.

const (
	repeatN     = 200
	repeatTopic = "dup-topic"
	repeatGroup = "dup-group"
	// repeatUserData pads the group's member metadata and assignment, and
	// the committed offsets' metadata, so that an answer given once per
	// copy is large enough to see.
	repeatUserData  = 16 << 10
	repeatOffsetMD  = 4000
	repeatConfigKey = "retention.ms"
)

// repeatExempt lists request arrays the test does not repeat, each with the
// reason. Every other array of every API in apiTable is repeated.
var repeatExempt = map[string]string{}

// repeatWorld is what a fresh broker holds when a request is sent to it: a
// topic with records in two partitions, and a Stable group with one member
// that committed offsets with metadata.
type repeatWorld struct {
	b          *Broker
	topicID    [16]byte
	memberID   string
	generation int32
}

func readFrame(t *testing.T, nc net.Conn) []byte {
	t.Helper()
	var size [4]byte
	_, err := io.ReadFull(nc, size[:])
	require.NoError(t, err, "the broker answered")
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	_, err = io.ReadFull(nc, body)
	require.NoError(t, err)
	return body
}

// roundTrip sends req on nc and decodes its answer.
func roundTrip(t *testing.T, nc net.Conn, req kmsg.Request) kmsg.Response {
	t.Helper()
	_, err := nc.Write(kmsg.NewRequestFormatter(kmsg.FormatterClientID("repeat")).AppendRequest(nil, req, 1))
	require.NoError(t, err)
	body := readFrame(t, nc)[4:] // correlation id
	if req.IsFlexible() && req.Key() != kmsg.ApiVersions.Int16() {
		require.Equal(t, byte(0), body[0], "no tags in the response header")
		body = body[1:]
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	require.NoError(t, resp.ReadFrom(body))
	return resp
}

func newRepeatWorld(t *testing.T, profile string) *repeatWorld {
	t.Helper()
	b, err := New(WithProfile(profile), WithClock(clock.NewManual(time.Unix(1_700_000_000, 0))),
		WithTopics(TopicSpec{Name: repeatTopic, Partitions: 2}))
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	w := &repeatWorld{b: b, topicID: b.data.get(repeatTopic).id}
	nc, err := net.Dial("tcp", b.Addr())
	require.NoError(t, err)
	defer nc.Close()
	require.NoError(t, nc.SetDeadline(time.Now().Add(30*time.Second)))

	for p := range int32(2) {
		produce := kmsg.NewPtrProduceRequest()
		produce.SetVersion(9)
		produce.Acks = -1
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = repeatTopic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = p, benchBatch(3)
		rt.Partitions = append(rt.Partitions, rp)
		produce.Topics = append(produce.Topics, rt)
		resp := roundTrip(t, nc, produce).(*kmsg.ProduceResponse)
		require.Zero(t, resp.Topics[0].Partitions[0].ErrorCode)
	}

	join := kmsg.NewPtrJoinGroupRequest()
	join.SetVersion(3) // no MEMBER_ID_REQUIRED round
	fillRepeat(reflect.ValueOf(join).Elem(), "", w)
	join.MemberID = ""
	jr := roundTrip(t, nc, join).(*kmsg.JoinGroupResponse)
	require.Zero(t, jr.ErrorCode)
	w.memberID, w.generation = jr.MemberID, jr.Generation

	sync := kmsg.NewPtrSyncGroupRequest()
	sync.SetVersion(3)
	fillRepeat(reflect.ValueOf(sync).Elem(), "", w)
	sr := roundTrip(t, nc, sync).(*kmsg.SyncGroupResponse)
	require.Zero(t, sr.ErrorCode)

	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.SetVersion(8)
	fillRepeat(reflect.ValueOf(commit).Elem(), "", w)
	for p := int32(1); p < 2; p++ {
		cp := commit.Topics[0].Partitions[0]
		cp.Partition = p
		commit.Topics[0].Partitions = append(commit.Topics[0].Partitions, cp)
	}
	cr := roundTrip(t, nc, commit).(*kmsg.OffsetCommitResponse)
	for _, p := range cr.Topics[0].Partitions {
		require.Zero(t, p.ErrorCode)
	}
	return w
}

// buildRepeatRequest returns a valid request for key at version, every
// array holding one element, naming w's topic, group and member.
func buildRepeatRequest(key, version int16, w *repeatWorld) kmsg.Request {
	req := kmsg.RequestForKey(key)
	req.SetVersion(version)
	fillRepeat(reflect.ValueOf(req).Elem(), "", w)
	return req
}

func consumerMetadata() []byte {
	md := kmsg.NewConsumerMemberMetadata()
	md.Topics = []string{repeatTopic}
	md.UserData = bytes.Repeat([]byte("m"), repeatUserData)
	return md.AppendTo(nil)
}

func consumerAssignment() []byte {
	a := kmsg.NewConsumerMemberAssignment()
	at := kmsg.NewConsumerMemberAssignmentTopic()
	at.Topic, at.Partitions = repeatTopic, []int32{0, 1}
	a.Topics = append(a.Topics, at)
	a.UserData = bytes.Repeat([]byte("a"), repeatUserData)
	return a.AppendTo(nil)
}

// fillRepeat fills the struct v, of the type named owner, by field name:
// names of w's topic, group and member, a config key, valid sizes and
// timeouts, records; and one element in every array of structs.
func fillRepeat(v reflect.Value, owner string, w *repeatWorld) {
	owner = v.Type().Name()
	for i := range v.NumField() {
		f, sf := v.Field(i), v.Type().Field(i)
		name := sf.Name
		switch {
		case name == "UnknownTags" || name == "Version":
		case f.Kind() == reflect.String || f.Kind() == reflect.Pointer && f.Type().Elem().Kind() == reflect.String:
			s, ok := repeatString(owner, name, w)
			if !ok {
				continue
			}
			if f.Kind() == reflect.String {
				f.SetString(s)
			} else {
				f.Set(reflect.ValueOf(&s))
			}
		case f.Kind() == reflect.Array && name == "TopicID":
			f.Set(reflect.ValueOf(w.topicID))
		case f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.Uint8:
			switch name {
			case "Records":
				f.SetBytes(benchBatch(1))
			case "Metadata":
				f.SetBytes(consumerMetadata())
			case "MemberAssignment":
				f.SetBytes(consumerAssignment())
			}
		case f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.String:
			switch name {
			case "Groups", "GroupIDs", "CoordinatorKeys":
				f.Set(reflect.ValueOf([]string{repeatGroup}))
			case "TopicNames", "SubscribedTopicNames":
				f.Set(reflect.ValueOf([]string{repeatTopic}))
			case "ConfigNames":
				f.Set(reflect.ValueOf([]string{repeatConfigKey}))
			case "StatesFilter":
				f.Set(reflect.ValueOf([]string{"Stable"}))
			case "TypesFilter":
				f.Set(reflect.ValueOf([]string{"classic"}))
			case "TransactionalIDs":
				f.Set(reflect.ValueOf([]string{"dup-txn"}))
			case "StateFilters":
				f.Set(reflect.ValueOf([]string{"Ongoing"}))
			}
		case f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.Int8:
			if name == "AcknowledgeTypes" {
				f.Set(reflect.ValueOf([]int8{1})) // Accept
			}
		case f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.Int64:
			if name == "ProducerIDFilters" {
				f.Set(reflect.ValueOf([]int64{1}))
			}
		case f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.Int32:
			switch name {
			case "Partitions":
				f.Set(reflect.ValueOf([]int32{0}))
			case "Replicas": // broker ids: this broker is node 0
				f.Set(reflect.ValueOf([]int32{0}))
			}
		case f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.Struct:
			e := reflect.New(f.Type().Elem())
			if d, ok := e.Interface().(interface{ Default() }); ok {
				d.Default()
			}
			fillRepeat(e.Elem(), owner, w)
			f.Set(reflect.Append(reflect.MakeSlice(f.Type(), 0, 1), e.Elem()))
		case f.Kind() == reflect.Int32, f.Kind() == reflect.Int16, f.Kind() == reflect.Int64, f.Kind() == reflect.Int8:
			if n, ok := repeatInt(owner, name, w); ok {
				f.SetInt(n)
			}
		}
	}
}

func repeatString(owner, name string, w *repeatWorld) (string, bool) {
	switch name {
	case "Topic", "ResourceName":
		return repeatTopic, true
	case "Group", "GroupID", "CoordinatorKey":
		return repeatGroup, true
	case "MemberID":
		return w.memberID, true
	case "ProtocolType":
		return "consumer", true
	case "Protocol":
		return "range", true
	case "Mechanism":
		return "PLAIN", true
	case "Name":
		if strings.Contains(owner, "Protocol") {
			return "range", true
		}
		return repeatConfigKey, true
	case "Value":
		return "60000", true
	case "Metadata":
		return strings.Repeat("o", repeatOffsetMD), true
	}
	return "", false
}

func repeatInt(owner, name string, w *repeatWorld) (int64, bool) {
	switch name {
	case "Partition":
		return 0, true
	case "Generation":
		return int64(w.generation), true
	case "SessionTimeoutMillis", "RebalanceTimeoutMillis":
		return 30_000, true
	case "MaxWaitMillis":
		return 0, true
	case "MaxBytes", "PartitionMaxBytes":
		return 1 << 20, true
	case "Offset", "FetchOffset":
		return 1, true
	case "Timestamp":
		return -1, true
	case "ResourceType":
		return int64(kmsg.ConfigResourceTypeTopic), true
	case "NumPartitions", "ReplicationFactor":
		return 1, true
	case "Count":
		return 3, true
	case "Acks":
		return 1, true
	case "TimeoutMillis":
		return 5000, true
	}
	return 0, false
}

// slicePaths lists every array of v at any depth, except byte arrays, as
// dotted field paths through the first element of the arrays above it.
func slicePaths(v reflect.Value, prefix string) []string {
	var out []string
	for i := range v.NumField() {
		f, name := v.Field(i), v.Type().Field(i).Name
		if f.Kind() != reflect.Slice || f.Type().Elem().Kind() == reflect.Uint8 {
			continue
		}
		path := prefix + name
		out = append(out, path)
		if f.Type().Elem().Kind() == reflect.Struct && f.Len() > 0 {
			out = append(out, slicePaths(f.Index(0), path+".")...)
		}
	}
	return out
}

// sliceAt returns the array at path, through the first element of the
// arrays above it.
func sliceAt(v reflect.Value, path string) reflect.Value {
	first, rest, nested := strings.Cut(path, ".")
	f := v.FieldByName(first)
	if !nested {
		return f
	}
	return sliceAt(f.Index(0), rest)
}

// repeatAt makes the array at path hold n copies of its first element.
func repeatAt(v reflect.Value, path string, n int) {
	first, rest, nested := strings.Cut(path, ".")
	f := v.FieldByName(first)
	if f.Len() == 0 {
		return
	}
	if nested {
		repeatAt(f.Index(0), rest, n)
		return
	}
	out := reflect.MakeSlice(f.Type(), 0, n)
	for range n {
		out = reflect.Append(out, f.Index(0))
	}
	f.Set(out)
}
