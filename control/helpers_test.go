package control_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/goleak"

	"github.com/vastfake/vastfake/control"
	"github.com/vastfake/vastfake/fixtures"
)

// TestMain fails the package if a goroutine outlives the tests: brokers,
// HTTP servers and clients must all be closed by each test's end.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// deadline bounds every wait; it never decides behaviour.
const deadline = 20 * time.Second

// serve starts the control plane of k's broker on an httptest server
// closed with the test, and returns its URL.
func serve(t *testing.T, k *fixtures.Kafka) string {
	srv := httptest.NewServer(control.New(k.Broker()))
	t.Cleanup(srv.Close)
	return srv.URL
}

// call sends a request with an optional JSON body and decodes the JSON
// answer into out (if not nil); it returns the status code.
func call(t *testing.T, method, url string, body any, out any) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"), "%s %s answered %s", method, url, data)
	if out != nil {
		require.NoError(t, json.Unmarshal(data, out), "%s", data)
	}
	return resp.StatusCode
}

// groupOfTwo starts two consumers of topic in group, client ids
// "member-one" and "member-two", waits until they share its partitions,
// and has each commit offset 4+p on every partition p it owns. It returns
// the client id that owns each partition.
func groupOfTwo(t *testing.T, k *fixtures.Kafka, group, topic string, partitions int) map[int32]string {
	t.Helper()
	clients := map[string]*kgo.Client{}
	for _, id := range []string{"member-one", "member-two"} {
		clients[id] = k.Client(kgo.ClientID(id), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
			kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	}
	k.WaitAssignment(group, partitions/2, partitions-partitions/2)

	g, ok := k.Broker().Group(group)
	require.True(t, ok)
	owners := map[int32]string{}
	for _, m := range g.Members {
		var a kmsg.ConsumerMemberAssignment
		require.NoError(t, a.ReadFrom(m.Assignment))
		offsets := map[int32]kgo.EpochOffset{}
		for _, at := range a.Topics {
			for _, p := range at.Partitions {
				owners[p] = m.ClientID
				offsets[p] = kgo.EpochOffset{Epoch: -1, Offset: 4 + int64(p)}
			}
		}
		commit(t, clients[m.ClientID], topic, offsets)
	}
	require.Len(t, owners, partitions)
	return owners
}

// commit commits offsets through the group member cl, retrying while the
// client is still finishing its join (a commit then fails with a
// rebalance error), until the deadline.
func commit(t *testing.T, cl *kgo.Client, topic string, offsets map[int32]kgo.EpochOffset) {
	t.Helper()
	end := time.Now().Add(deadline)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		var failure error
		cl.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{topic: offsets},
			func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
				failure = err
				if err == nil {
					for _, rt := range resp.Topics {
						for _, rp := range rt.Partitions {
							if rp.ErrorCode != 0 {
								failure = kerr.ErrorForCode(rp.ErrorCode)
							}
						}
					}
				}
			})
		cancel()
		if failure == nil {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("commit %v: %v", offsets, failure)
		}
		time.Sleep(10 * time.Millisecond) // poll interval, not a wait for state
	}
}
