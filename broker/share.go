package broker

// Which broker answers what. With several brokers in the kafka profile
// (AnyAddressServes off) each broker serves its own share, as Kafka's do:
// the partitions it leads, the groups and transactional ids it
// coordinates, and listings of what it coordinates. The API table's share
// column says which share each API is; serve applies it, for every API, in
// this one place.

import (
	"reflect"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vastfake/vastfake/rules"
)

// serve answers r with a's handler, limited to the share of the broker r
// reached (see share): partitions led elsewhere get NOT_LEADER_OR_FOLLOWER
// (with the current leader, where the version carries it) while the others
// are handled; groups and transactional ids coordinated elsewhere get
// NOT_COORDINATOR, each on its own in a request that names several; a
// listing lists only what this broker coordinates. In the audit profile
// each such answer is a finding of AnyAddressServes, since VAST is assumed
// to serve everything at every address.
func (b *Broker) serve(a *api, r *request) kmsg.Response {
	here, ok := b.servesOnlyOwn(r)
	if !ok {
		return a.handle(b, r)
	}
	switch a.share {
	case partitionLeader:
		if b.mayBeMisdirected(r.kreq, here) {
			if resp := b.notLeader(a, r, here); resp != nil {
				return resp
			}
		}
		resp := a.handle(b, r)
		if fr, ok := resp.(*kmsg.FetchResponse); ok && fetchHasError(fr) {
			b.addLeaderHints(resp) // FENCED_LEADER_EPOCH names the leader too
		}
		return resp
	case groupCoordinator:
		return b.byCoordinator(a, r, here, "group", b.CoordinatorOf)
	case txnCoordinator:
		return b.byCoordinator(a, r, here, "transactional id", b.TxnCoordinatorOf)
	case ownGroups, ownTransactions:
		return b.ownListing(a, r, here)
	}
	return a.handle(b, r)
}

// servesOnlyOwn returns the broker r reached, and true when that broker
// serves only the partitions it leads and the keys it coordinates: with
// several brokers, unless VAST's AnyAddressServes is enforced (every
// address serves everything, and there is nothing to record).
func (b *Broker) servesOnlyOwn(r *request) (int32, bool) {
	if len(b.nodes) < 2 || r.conn == nil || r.conn.node == nil || b.enforced(rules.AnyAddressServes) {
		return 0, false
	}
	return r.conn.node.id, true
}

// notLeader answers r when it names a partition here does not lead: those
// partitions get NOT_LEADER_OR_FOLLOWER and the others are handled, but for
// those here is a replica of that r names with another leader epoch than
// theirs, which the handler answers by their epoch first, as Kafka's
// followers do (epochFirst), and for partitions that do not exist, which
// it answers UNKNOWN_TOPIC_OR_PARTITION (or UNKNOWN_TOPIC_ID), as Kafka's
// brokers do from their metadata. It returns nil when no partition r
// names gets NOT_LEADER_OR_FOLLOWER.
func (b *Broker) notLeader(a *api, r *request, here int32) kmsg.Response {
	key := a.key
	byEpoch := b.epochFirst(r, here) // the handler answers them FENCED_LEADER_EPOCH or UNKNOWN_LEADER_EPOCH
	elsewhere := func(topic string, p int32) bool {
		return b.LeaderOf(topic, p) != here && !byEpoch[topicPartition{topic, p}] && b.partitionExists(topic, p)
	}
	first, firstP := "", int32(0)
	eachTopic(reflect.ValueOf(r.kreq).Elem(), b.topicNameOf, func(topic string, parts reflect.Value) {
		for i := 0; i < parts.Len() && first == ""; i++ {
			if p := partitionOf(parts.Index(i)); elsewhere(topic, p) {
				first, firstP = topic, p
			}
		}
	})
	if first == "" {
		return nil
	}
	if b.vast(r, rules.AnyAddressServes, rules.Differs, first, "", func() string {
		return kmsg.NameForKey(key) + " for partition " + strconv.Itoa(int(firstP)) + " reached broker " + strconv.Itoa(int(here)) +
			", not its leader " + strconv.Itoa(int(b.LeaderOf(first, firstP))) + "; Kafka answers NOT_LEADER_OR_FOLLOWER, VAST serves it (assumed)"
	}) {
		return nil
	}
	resp := b.splitAnswer(a, r, elsewhere, kerr.NotLeaderForPartition.Code)
	b.addLeaderHints(resp)
	return resp
}

// byCoordinator answers a request for groups (or transactional ids, kind)
// at here: the keys coordinated elsewhere get NOT_COORDINATOR and the
// others are handled, so that a request naming several (DescribeGroups,
// DeleteGroups, OffsetFetch v8+, DescribeTransactions) is answered key by
// key, as Kafka's brokers answer it.
func (b *Broker) byCoordinator(a *api, r *request, here int32, kind string, coordinatorOf func(string) int32) kmsg.Response {
	v := reflect.ValueOf(r.kreq).Elem()
	var keys []string
	if kind == "group" {
		keys = groupsOf(v)
	} else {
		keys = transactionalIDsOf(r.kreq)
	}
	var elsewhere []string
	for _, k := range keys {
		if coordinatorOf(k) != here {
			elsewhere = append(elsewhere, k)
		}
	}
	if len(elsewhere) == 0 {
		return a.handle(b, r)
	}
	group := ""
	if kind == "group" {
		group = elsewhere[0]
	}
	if b.vast(r, rules.AnyAddressServes, rules.Differs, "", group, func() string {
		return kmsg.NameForKey(a.key) + " for " + kind + " " + elsewhere[0] + " reached broker " + strconv.Itoa(int(here)) +
			", not its coordinator " + strconv.Itoa(int(coordinatorOf(elsewhere[0]))) + "; Kafka answers NOT_COORDINATOR, VAST serves it (assumed)"
	}) {
		return a.handle(b, r)
	}
	if req, ok := r.kreq.(*kmsg.DescribeTransactionsRequest); ok {
		mine := *req
		mine.TransactionalIDs = slices.DeleteFunc(slices.Clone(req.TransactionalIDs), func(id string) bool { return coordinatorOf(id) != here })
		r.kreq = &mine
		resp := a.handle(b, r).(*kmsg.DescribeTransactionsResponse)
		for _, id := range firstOfEach(elsewhere, self) {
			st := kmsg.NewDescribeTransactionsResponseTransactionState()
			st.TransactionalID, st.ErrorCode = id, kerr.NotCoordinator.Code
			resp.TransactionStates = append(resp.TransactionStates, st)
		}
		return resp
	}
	groupsName := "Groups"
	gs := v.FieldByName(groupsName)
	if !gs.IsValid() {
		groupsName = "GroupIDs" // ShareGroupDescribe
		gs = v.FieldByName(groupsName)
	}
	if len(elsewhere) == len(keys) || !gs.IsValid() || gs.Kind() != reflect.Slice {
		resp := errorAnswer(r, kerr.NotCoordinator.Code)
		// The top-level error too, where the version has one (OffsetFetch
		// v2-v7, OffsetDelete): clients read it first.
		setErr(reflect.ValueOf(resp).Elem(), kerr.NotCoordinator.Code)
		if init, ok := resp.(*kmsg.InitProducerIDResponse); ok {
			init.ProducerID, init.ProducerEpoch = -1, -1
		}
		return resp
	}
	// Several groups, some coordinated here: split the request as
	// splitAnswer splits partitions.
	failed := reflect.New(v.Type()).Elem()
	failed.Set(v)
	keep := func(in reflect.Value, mine bool) reflect.Value {
		out := reflect.MakeSlice(in.Type(), 0, in.Len())
		for i := 0; i < in.Len(); i++ {
			e := in.Index(i)
			name := ""
			if e.Kind() == reflect.String {
				name = e.String()
			} else {
				name, _ = groupField(e)
			}
			if (coordinatorOf(name) == here) == mine {
				out = reflect.Append(out, e)
			}
		}
		return out
	}
	failed.FieldByName(groupsName).Set(keep(gs, false))
	gs.Set(keep(gs, true))
	resp := a.handle(b, r)
	errPart := reflect.New(reflect.ValueOf(resp).Elem().Type()).Elem()
	mirrorErrors(failed, errPart, kerr.NotCoordinator.Code)
	out := reflect.ValueOf(resp).Elem().FieldByName("Groups")
	out.Set(reflect.AppendSlice(out, errPart.FieldByName("Groups")))
	return resp
}

// ownListing answers a listing (ListGroups, ListTransactions) with what
// here coordinates only, as each Kafka broker lists its own share and
// admin clients ask every broker and add the answers up.
func (b *Broker) ownListing(a *api, r *request, here int32) kmsg.Response {
	resp := a.handle(b, r)
	left := 0
	switch resp := resp.(type) {
	case *kmsg.ListGroupsResponse:
		n := len(resp.Groups)
		resp.Groups = slices.DeleteFunc(resp.Groups, func(g kmsg.ListGroupsResponseGroup) bool { return b.CoordinatorOf(g.Group) != here })
		left = n - len(resp.Groups)
	case *kmsg.ListTransactionsResponse:
		n := len(resp.TransactionStates)
		resp.TransactionStates = slices.DeleteFunc(resp.TransactionStates, func(st kmsg.ListTransactionsResponseTransactionState) bool {
			return b.TxnCoordinatorOf(st.TransactionalID) != here
		})
		left = n - len(resp.TransactionStates)
	}
	if left > 0 && b.audited(rules.AnyAddressServes) {
		b.recordFinding(r, rules.AnyAddressServes, rules.Differs, "", "", func() string {
			return kmsg.NameForKey(a.key) + " at broker " + strconv.Itoa(int(here)) + " left out " + strconv.Itoa(left) +
				" coordinated by other brokers; Kafka lists each broker's own, VAST lists all at every address (assumed)"
		})
	}
	return resp
}

// mayBeMisdirected is the cheap first look for the produce and fetch paths:
// false when every partition of a Produce or Fetch request is led by here,
// so that the reflection of notLeader runs only for requests that need it;
// true for every other request.
func (b *Broker) mayBeMisdirected(kreq kmsg.Request, here int32) bool {
	elsewhere := func(name string, id [16]byte, p int32) bool { return b.LeaderOf(b.topicName(name, id), p) != here }
	switch req := kreq.(type) {
	case *kmsg.ProduceRequest:
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				if elsewhere(t.Topic, t.TopicID, p.Partition) {
					return true
				}
			}
		}
		return false
	case *kmsg.FetchRequest:
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				if elsewhere(t.Topic, t.TopicID, p.Partition) {
					return true
				}
			}
		}
		return false
	case *kmsg.ShareFetchRequest, *kmsg.ShareAcknowledgeRequest:
		// A share session fetches partitions its request does not name:
		// the handlers check each partition's leader themselves
		// (shareLog.Locate).
		return false
	}
	return true
}

// transactionalIDsOf returns the transactional ids a transaction request
// names.
func transactionalIDsOf(kreq kmsg.Request) []string {
	switch req := kreq.(type) {
	case *kmsg.InitProducerIDRequest:
		if req.TransactionalID != nil {
			return []string{*req.TransactionalID}
		}
	case *kmsg.AddPartitionsToTxnRequest:
		return []string{req.TransactionalID}
	case *kmsg.AddOffsetsToTxnRequest:
		return []string{req.TransactionalID}
	case *kmsg.EndTxnRequest:
		return []string{req.TransactionalID}
	case *kmsg.DescribeTransactionsRequest:
		return req.TransactionalIDs
	}
	return nil
}
