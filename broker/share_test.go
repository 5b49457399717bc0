package broker

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/vastfake/vastfake/rules"
)

// TestEveryAPIHasAShare: every API the table serves says which broker
// answers it, and the share fits the request's shape: a request that names
// a group is its coordinator's, one that names a transactional id (and no
// group) its coordinator's, one that names partitions (and neither) their
// leader's, and a listing of groups or transactions each broker's own. A
// new row cannot forget it.
func TestEveryAPIHasAShare(t *testing.T) {
	t.Parallel()
	for _, a := range apiTable {
		if a.handle == nil {
			continue
		}
		name := kmsg.NameForKey(a.key)
		require.NotEqual(t, shareUnset, a.share, "%s: apiTable row has no share", name)
		req := reflect.ValueOf(kmsg.RequestForKey(a.key)).Elem()
		resp := reflect.ValueOf(kmsg.ResponseForKey(a.key)).Elem()
		has := func(v reflect.Value, field string) bool { return v.FieldByName(field).IsValid() }
		names := func(v reflect.Value, field string) bool {
			topics := v.FieldByName("Topics")
			return topics.IsValid() && topics.Kind() == reflect.Slice && topics.Type().Elem().Kind() == reflect.Struct &&
				reflect.New(topics.Type().Elem()).Elem().FieldByName(field).Kind() == reflect.Slice
		}
		want := anyBroker
		switch {
		case a.key == int16(kmsg.AddOffsetsToTxn):
			// It names the group whose offsets the transaction will
			// commit, but adds them to the transaction at its coordinator.
			want = txnCoordinator
		case a.key == int16(kmsg.ElectLeaders):
			// It names partitions, for the controller to elect their
			// leaders; any broker forwards it there.
			want = anyBroker
		case a.key == int16(kmsg.ShareFetch) || a.key == int16(kmsg.ShareAcknowledge):
			// They name their share group, but each partition's leader
			// holds its share state and answers for it (KIP-932's
			// share-partition leader).
			want = partitionLeader
		case has(req, "Group") || has(req, "Groups") || has(req, "GroupID") || has(req, "GroupIDs"):
			want = groupCoordinator
		case has(req, "TransactionalID") || has(req, "TransactionalIDs"):
			want = txnCoordinator
		case names(req, "Partitions"):
			want = partitionLeader
		case has(resp, "Groups"):
			want = ownGroups
		case has(resp, "TransactionStates"):
			want = ownTransactions
		}
		assert.Equal(t, want, a.share, "%s: share does not fit the request's shape", name)
	}
}

// groupsCoordinatedBy returns n group names for each broker of b, by the
// broker that coordinates them.
func groupsCoordinatedBy(b *Broker, n int) map[int32][]string {
	out := map[int32][]string{}
	for i := 0; ; i++ {
		g := fmt.Sprintf("group-%d", i)
		if c := b.CoordinatorOf(g); len(out[c]) < n {
			out[c] = append(out[c], g)
		}
		full := true
		for _, id := range b.BrokerIDs() {
			full = full && len(out[id]) == n
		}
		if full {
			return out
		}
	}
}

// TestListingsPerBroker: in the kafka profile at 3 brokers each broker
// lists only the groups and transactions it coordinates, so kadm's
// ListGroups (which asks every broker) finds each group once; a
// DescribeGroups and an OffsetFetch naming groups of several coordinators
// get NOT_COORDINATOR for the others, group by group. The VAST profile
// lists every group at every broker; the audit profile answers as Kafka
// and records a finding.
func TestListingsPerBroker(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, profile := range []string{"kafka", "audit", "vast"} {
		t.Run(profile, func(t *testing.T) {
			b, err := New(WithBrokers(3), WithNodeID(1), WithProfile(profile), WithTopics(TopicSpec{Name: "t", Partitions: 3}))
			require.NoError(t, err)
			defer b.Close()
			cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
			require.NoError(t, err)
			defer cl.Close()
			adm := kadm.NewClient(cl)
			byCoord := groupsCoordinatedBy(b, 2)
			var all []string
			for _, gs := range byCoord {
				for _, g := range gs {
					offs := kadm.Offsets{}
					offs.Add(kadm.Offset{Topic: "t", Partition: 0, At: 1, LeaderEpoch: -1})
					_, err := adm.CommitOffsets(ctx, g, offs)
					require.NoError(t, err, g)
					all = append(all, g)
				}
			}
			listed, err := adm.ListGroups(ctx)
			require.NoError(t, err)
			assert.ElementsMatch(t, all, listed.Groups(), "each group once")

			for _, id := range b.BrokerIDs() {
				resp, err := kmsg.NewPtrListGroupsRequest().RequestWith(ctx, cl.Broker(int(id)))
				require.NoError(t, err)
				var got []string
				for _, g := range resp.Groups {
					got = append(got, g.Group)
				}
				if profile == "vast" {
					assert.ElementsMatch(t, all, got, "VAST: broker %d lists every group", id)
					continue
				}
				assert.ElementsMatch(t, byCoord[id], got, "broker %d lists the groups it coordinates", id)

				desc := kmsg.NewPtrDescribeGroupsRequest()
				desc.Groups = all
				dresp, err := desc.RequestWith(ctx, cl.Broker(int(id)))
				require.NoError(t, err)
				require.Len(t, dresp.Groups, len(all))
				for _, g := range dresp.Groups {
					want := int16(0)
					if b.CoordinatorOf(g.Group) != id {
						want = kerr.NotCoordinator.Code
					}
					assert.Equal(t, want, g.ErrorCode, "DescribeGroups of %s at broker %d", g.Group, id)
				}

				fetch := kmsg.NewPtrOffsetFetchRequest()
				fetch.SetVersion(8)
				for _, g := range all {
					rg := kmsg.NewOffsetFetchRequestGroup()
					rg.Group = g
					fetch.Groups = append(fetch.Groups, rg)
				}
				fresp, err := fetch.RequestWith(ctx, cl.Broker(int(id)))
				require.NoError(t, err)
				require.Len(t, fresp.Groups, len(all))
				for _, g := range fresp.Groups {
					if b.CoordinatorOf(g.Group) != id {
						assert.Equal(t, kerr.NotCoordinator.Code, g.ErrorCode, "OffsetFetch of %s at broker %d", g.Group, id)
						continue
					}
					assert.Zero(t, g.ErrorCode)
					require.Len(t, g.Topics, 1, g.Group)
					assert.Equal(t, int64(1), g.Topics[0].Partitions[0].Offset, g.Group)
				}
			}
			fetched := adm.FetchManyOffsets(ctx, all...)
			for _, g := range all {
				require.NoError(t, fetched[g].Err, g)
				o, _ := fetched[g].Fetched.Lookup("t", 0)
				assert.Equal(t, int64(1), o.At, g)
			}
			found := false
			for _, f := range b.Findings() {
				found = found || f.Rule == rules.AnyAddressServes.String()
			}
			assert.Equal(t, profile == "audit", found, "a finding of AnyAddressServes in the audit profile only")
		})
	}
}

// TestDescribeProducersPerBroker: in the kafka profile at 3 brokers a
// DescribeProducers naming every partition is answered for the partitions
// the broker leads, and NOT_LEADER_OR_FOLLOWER for the others; ListTransactions
// lists the transactional ids the broker coordinates.
func TestDescribeProducersPerBroker(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := New(WithBrokers(3), WithNodeID(1), WithProfile("kafka"), WithTopics(TopicSpec{Name: "t", Partitions: 3}))
	require.NoError(t, err)
	defer b.Close()
	ids := map[int32]string{}
	for i := 0; len(ids) < 3; i++ {
		id := fmt.Sprintf("tx-%d", i)
		if c := b.TxnCoordinatorOf(id); ids[c] == "" {
			ids[c] = id
		}
	}
	for _, id := range ids {
		p, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.TransactionalID(id), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		require.NoError(t, err)
		defer p.Close()
		require.NoError(t, p.BeginTransaction())
		for part := range int32(3) {
			require.NoError(t, p.ProduceSync(ctx, &kgo.Record{Topic: "t", Partition: part, Value: []byte(id)}).FirstErr())
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	require.NoError(t, err)
	defer cl.Close()
	for _, here := range b.BrokerIDs() {
		req := kmsg.NewPtrDescribeProducersRequest()
		rt := kmsg.NewDescribeProducersRequestTopic()
		rt.Topic, rt.Partitions = "t", []int32{0, 1, 2}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl.Broker(int(here)))
		require.NoError(t, err)
		for _, st := range resp.Topics {
			for _, sp := range st.Partitions {
				if b.LeaderOf("t", sp.Partition) == here {
					assert.Zero(t, sp.ErrorCode, "broker %d leads partition %d", here, sp.Partition)
					assert.Len(t, sp.ActiveProducers, 3)
				} else {
					assert.Equal(t, kerr.NotLeaderForPartition.Code, sp.ErrorCode, "broker %d, partition %d", here, sp.Partition)
				}
			}
		}
		list, err := kmsg.NewPtrListTransactionsRequest().RequestWith(ctx, cl.Broker(int(here)))
		require.NoError(t, err)
		require.Len(t, list.TransactionStates, 1, "broker %d", here)
		assert.Equal(t, ids[here], list.TransactionStates[0].TransactionalID)
	}
}

// TestOffsetFetchAtAnotherBroker: an OffsetFetch v2-v7 for a group another
// broker coordinates gets NOT_COORDINATOR at the top level, where clients
// look first, and in each partition it names.
func TestOffsetFetchAtAnotherBroker(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := New(WithBrokers(3), WithNodeID(1), WithProfile("kafka"), WithTopics(TopicSpec{Name: "t", Partitions: 1}))
	require.NoError(t, err)
	defer b.Close()
	versions := kversion.Stable()
	versions.SetMaxKeyVersion(int16(kmsg.OffsetFetch), 7)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.MaxVersions(versions))
	require.NoError(t, err)
	defer cl.Close()
	group := groupsCoordinatedBy(b, 1)[2][0]
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = group
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic, rt.Partitions = "t", []int32{0}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl.Broker(1))
	require.NoError(t, err)
	require.Equal(t, int16(7), resp.Version)
	assert.Equal(t, kerr.NotCoordinator.Code, resp.ErrorCode)
	require.Len(t, resp.Topics, 1)
	assert.Equal(t, kerr.NotCoordinator.Code, resp.Topics[0].Partitions[0].ErrorCode)
}
