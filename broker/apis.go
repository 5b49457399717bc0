package broker

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/vastfake/vastfake/rules"
)

// api is one row of the API table: the versions vastfake serves for a key
// and the function that answers it. A nil response means "send nothing"
// (Produce with acks=0). A row with no handler is never served; it is
// there only to name the rule that hides it.
type api struct {
	key      int16
	min, max int16
	handle   func(*Broker, *request) kmsg.Response
	// share says which broker answers the API when each broker serves
	// only its own share (several brokers, AnyAddressServes off); every
	// row with a handler names one (TestEveryAPIHasAShare).
	share share
	// hiddenBy, when set, names the rule (a bool field of rules.Rules)
	// that removes this API: while the rule is enforced, the API is
	// neither advertised nor served, and a client that sends it anyway has
	// its connection closed and the rule recorded in the request log.
	// While the rule is audited the API is advertised and served as in
	// Kafka (if vastfake serves it at all) and every request for it is a
	// refused finding.
	hiddenBy string
	// capBy, when set, names the rule that lowers the advertised max to
	// capTo. Enforced, requests above capTo close the connection; audited,
	// they are served and each is a refused finding. A capTo below min
	// hides the API under capBy, as hiddenBy does.
	capBy string
	capTo int16
	// advertised is the max version ApiVersions advertises: max, or capTo
	// while capBy is on. buildAPIs sets it.
	advertised int16
	// ceilings lower max while the broker follows an older Kafka version
	// (WithKafkaVersion): before each ceiling's release the API is served
	// up to its max at most, and a max below min hides the API, as a
	// release that did not have it.
	ceilings []ceiling
	// beforeAuth marks the APIs a client may call before it has
	// authenticated on a listener with users; any other closes the
	// connection, as in Kafka.
	beforeAuth bool
	// advertiseV0 makes ApiVersions advertise min version 0 although
	// requests below min are refused, as Kafka 4.x does for Produce
	// (KAFKA-18659): librdkafka before 2.10 turns compression off, silently,
	// against a broker whose Produce range does not include v0-v2.
	advertiseV0 bool
}

// ceiling is the highest version of an API Kafka releases before one
// served (see api.ceilings); -1 for an API they did not have.
type ceiling struct {
	before KafkaVersion
	max    int16
}

const maxAPIKey = kmsg.MaxKey

// share is which broker answers an API when several brokers each serve
// their own share, as Kafka's do: partitions are served by their leader,
// groups and transactional ids by their coordinator, and a listing lists
// what the broker that answers coordinates (admin clients ask every
// broker and add the answers up). Broker.serve decides by it, in one
// place; with AnyAddressServes enforced (VAST) every broker answers
// everything whole.
type share uint8

const (
	shareUnset share = iota
	// anyBroker: every broker answers it whole (metadata, topic and
	// config admin, which Kafka's brokers forward to the controller).
	anyBroker
	// partitionLeader: each partition by its leader; the others get
	// NOT_LEADER_OR_FOLLOWER.
	partitionLeader
	// groupCoordinator: each group by its coordinator; the others get
	// NOT_COORDINATOR, group by group in a request that names several.
	groupCoordinator
	// txnCoordinator: each transactional id by its coordinator; the
	// others get NOT_COORDINATOR, id by id.
	txnCoordinator
	// ownGroups: lists the groups the broker coordinates.
	ownGroups
	// ownTransactions: lists the transactional ids the broker
	// coordinates.
	ownTransactions
)

// apiTable is every Kafka API vastfake serves, in key order, and the ones a
// VAST rule hides that vastfake never serves (no handler). ApiVersions is
// derived from it, so the broker can never advertise an API it does not
// serve. Minimum versions follow Kafka 4.x, which dropped the pre-2.1
// versions (and with them message formats v0 and v1).
var apiTable = []api{
	{key: 0, min: 3, max: 13, handle: handleProduce, share: partitionLeader, capBy: "NoTopicIDs", capTo: 12, advertiseV0: true,
		ceilings: []ceiling{{before: Kafka4_1, max: 12}}}, // v13: topic ids (KIP-516)
	{key: 1, min: 4, max: 16, handle: handleFetch, share: partitionLeader, capBy: "NoTopicIDs", capTo: 12},
	{key: 2, min: 1, max: 10, handle: handleListOffsets, share: partitionLeader},
	{key: 3, min: 0, max: 12, handle: handleMetadata, share: anyBroker},
	{key: 8, min: 2, max: 9, handle: handleOffsetCommit, share: groupCoordinator},
	{key: 9, min: 1, max: 9, handle: handleOffsetFetch, share: groupCoordinator},
	{key: 10, min: 0, max: 6, handle: handleFindCoordinator, share: anyBroker},
	{key: 11, min: 0, max: 9, handle: handleJoinGroup, share: groupCoordinator},
	{key: 12, min: 0, max: 4, handle: handleHeartbeat, share: groupCoordinator},
	{key: 13, min: 0, max: 5, handle: handleLeaveGroup, share: groupCoordinator},
	{key: 14, min: 0, max: 5, handle: handleSyncGroup, share: groupCoordinator},
	{key: 15, min: 0, max: 5, handle: handleDescribeGroups, share: groupCoordinator},
	{key: 16, min: 0, max: 5, handle: handleListGroups, share: ownGroups},
	{key: 17, min: 0, max: 1, handle: handleSaslHandshake, share: anyBroker, beforeAuth: true},
	{key: 18, min: 0, max: 4, handle: handleApiVersions, share: anyBroker, beforeAuth: true},
	{key: 19, min: 2, max: 7, handle: handleCreateTopics, share: anyBroker},
	{key: 20, min: 1, max: 6, handle: handleDeleteTopics, share: anyBroker},
	{key: 21, min: 0, max: 2, handle: handleDeleteRecords, share: partitionLeader},
	{key: 22, min: 0, max: 5, handle: handleInitProducerID, share: txnCoordinator, hiddenBy: "NoIdempotence"},
	{key: 23, min: 2, max: 4, handle: handleOffsetForLeaderEpoch, share: partitionLeader, hiddenBy: "NoOffsetForLeaderEpoch"},
	{key: 24, min: 0, max: 5, handle: handleAddPartitionsToTxn, share: txnCoordinator, hiddenBy: "NoIdempotence"},
	{key: 25, min: 0, max: 4, handle: handleAddOffsetsToTxn, share: txnCoordinator, hiddenBy: "NoIdempotence"},
	{key: 26, min: 0, max: 5, handle: handleEndTxn, share: txnCoordinator, hiddenBy: "NoIdempotence"},
	{key: 28, min: 0, max: 5, handle: handleTxnOffsetCommit, share: groupCoordinator, hiddenBy: "NoIdempotence"},
	{key: 32, min: 1, max: 4, handle: handleDescribeConfigs, share: anyBroker},
	{key: 33, min: 0, max: 2, handle: handleAlterConfigs, share: anyBroker},
	{key: 36, min: 0, max: 2, handle: handleSaslAuthenticate, share: anyBroker, beforeAuth: true},
	{key: 37, min: 0, max: 3, handle: handleCreatePartitions, share: anyBroker, hiddenBy: "FixedPartitions"},
	{key: 42, min: 0, max: 2, handle: handleDeleteGroups, share: groupCoordinator},
	{key: 43, min: 0, max: 2, handle: handleElectLeaders, share: anyBroker},
	{key: 44, min: 0, max: 1, handle: handleIncrementalAlterConfigs, share: anyBroker},
	{key: 47, min: 0, max: 0, handle: handleOffsetDelete, share: groupCoordinator, hiddenBy: "NoOffsetDelete"},
	{key: 50, min: 0, max: 0, handle: handleDescribeUserScramCredentials, share: anyBroker, hiddenBy: "PlainSASLOnly"},
	{key: 51, min: 0, max: 0, handle: handleAlterUserScramCredentials, share: anyBroker, hiddenBy: "PlainSASLOnly"},
	{key: 61, min: 0, max: 0, handle: handleDescribeProducers, share: partitionLeader, hiddenBy: "NoIdempotence"},
	{key: 65, min: 0, max: 0, handle: handleDescribeTransactions, share: txnCoordinator, hiddenBy: "NoIdempotence"},
	{key: 66, min: 0, max: 1, handle: handleListTransactions, share: ownTransactions, hiddenBy: "NoIdempotence"},
	// KIP-848 assignments name topics by ID only: without IDs they cannot work.
	{key: 68, min: 0, max: 1, handle: handleConsumerGroupHeartbeat, share: groupCoordinator, hiddenBy: "ClassicGroupsOnly", capBy: "NoTopicIDs", capTo: -1},
	{key: 69, min: 0, max: 1, handle: handleConsumerGroupDescribe, share: groupCoordinator, hiddenBy: "ClassicGroupsOnly", capBy: "NoTopicIDs", capTo: -1},
	// Share groups (KIP-932) at Kafka 4.2's versions: v0 of the first four
	// was Kafka 4.0's early access, removed in 4.1. They come with Kafka
	// 4.2: a broker following an older Kafka version hides them
	// (beforeShareGroups). Like KIP-848's, they name topics by ID only.
	{key: 76, min: 1, max: 1, handle: handleShareGroupHeartbeat, share: groupCoordinator, hiddenBy: "NoShareGroups", capBy: "NoTopicIDs", capTo: -1, ceilings: beforeShareGroups},
	{key: 77, min: 1, max: 1, handle: handleShareGroupDescribe, share: groupCoordinator, hiddenBy: "NoShareGroups", capBy: "NoTopicIDs", capTo: -1, ceilings: beforeShareGroups},
	{key: 78, min: 1, max: 2, handle: handleShareFetch, share: partitionLeader, hiddenBy: "NoShareGroups", capBy: "NoTopicIDs", capTo: -1, ceilings: beforeShareGroups},
	{key: 79, min: 1, max: 2, handle: handleShareAcknowledge, share: partitionLeader, hiddenBy: "NoShareGroups", capBy: "NoTopicIDs", capTo: -1, ceilings: beforeShareGroups},
	{key: 88, hiddenBy: "ClassicGroupsOnly"}, // StreamsGroupHeartbeat (KIP-1071)
	{key: 89, hiddenBy: "ClassicGroupsOnly"}, // StreamsGroupDescribe
	{key: 90, min: 0, max: 1, handle: handleDescribeShareGroupOffsets, share: groupCoordinator, hiddenBy: "NoShareGroups", capBy: "NoTopicIDs", capTo: -1, ceilings: beforeShareGroups},
	{key: 91, min: 0, max: 0, handle: handleAlterShareGroupOffsets, share: groupCoordinator, hiddenBy: "NoShareGroups", capBy: "NoTopicIDs", capTo: -1, ceilings: beforeShareGroups},
	{key: 92, min: 0, max: 0, handle: handleDeleteShareGroupOffsets, share: groupCoordinator, hiddenBy: "NoShareGroups", capBy: "NoTopicIDs", capTo: -1, ceilings: beforeShareGroups},
}

// beforeShareGroups hides the share-group APIs before Kafka 4.2, the first
// release to serve share groups (KIP-932); see KafkaVersion.ShareGroups.
var beforeShareGroups = []ceiling{{before: Kafka4_2, max: -1}}

// buildAPIs applies the Kafka version (api.ceilings) and the rules' modes
// to the table: APIs a version does not have, or hidden by an enforced
// rule, are dropped and capped ones lowered. It also returns, per API key,
// the enforced rule that hides it, or "", so that a request for a hidden
// API can name the rule, and the audited rule that would hide it or cap
// its versions, or 0.
func buildAPIs(r *rules.Rules, kafka KafkaVersion) (apis []api, hiddenBy [maxAPIKey + 1]string, auditedBy [maxAPIKey + 1]rules.ID) {
	modes := r.Modes()
	out := make([]api, 0, len(apiTable))
	for _, a := range apiTable {
		served := a.max
		for _, c := range a.ceilings {
			if kafka.Before(c.before) {
				served = min(served, c.max)
			}
		}
		a.advertised = a.max
		if a.hiddenBy != "" {
			switch id := tableRule(a.hiddenBy); modes.Of(id) {
			case rules.Enforce:
				hiddenBy[a.key] = a.hiddenBy
				continue
			case rules.Audit:
				auditedBy[a.key] = id
			}
		}
		if served < a.min {
			auditedBy[a.key] = 0 // Kafka of this version does not serve it either
			continue
		}
		if a.handle == nil {
			continue
		}
		a.max, a.advertised = served, served
		if a.hiddenByCap() {
			switch id := tableRule(a.capBy); modes.Of(id) {
			case rules.Enforce:
				hiddenBy[a.key] = a.capBy
				continue
			case rules.Audit:
				if auditedBy[a.key] == 0 {
					auditedBy[a.key] = id
				}
			}
		} else if a.capBy != "" && a.capTo < a.max {
			switch id := tableRule(a.capBy); modes.Of(id) {
			case rules.Enforce:
				a.max, a.advertised = a.capTo, a.capTo
			case rules.Audit:
				a.advertised = a.capTo
				auditedBy[a.key] = id
			}
		}
		out = append(out, a)
	}
	return out, hiddenBy, auditedBy
}

// hiddenByCap reports whether capBy hides the API rather than lowering its
// versions: capTo is below its min.
func (a *api) hiddenByCap() bool { return a.capBy != "" && a.capTo < a.min }

// tableRule returns the rule apiTable names. A name that is not a rule is
// a mistake in apiTable, and panics on the first broker built (every test
// builds one).
func tableRule(name string) rules.ID {
	id, ok := rules.Lookup(name)
	if !ok {
		panic(fmt.Sprintf("apiTable: %q is not a rule of rules.Rules", name))
	}
	return id
}

// handleApiVersions answers ApiVersions v0-v4 with the table in force.
//
// v3+ carry the client's software name and version, which the connection
// keeps for the findings of audited rules.
// VAST: no KIP-848 (ConsumerGroupHeartbeat, ConsumerGroupDescribe) or
// share-group keys, no OffsetDelete, no InitProducerID
// or transactions, no CreatePartitions; Fetch and Produce stop at v12 (no
// topic IDs). All of that follows from the table and the rules. A client
// that sends a hidden API anyway has its connection closed, as Kafka does
// for an API it does not serve, and the request log names the rule.
// Produce is advertised from v0 although v0-v2 close the connection, as in
// Kafka 4.x (KAFKA-18659), so that older librdkafka compresses.
func handleApiVersions(b *Broker, r *request) kmsg.Response {
	if r.version >= 3 {
		req := r.kreq.(*kmsg.ApiVersionsRequest)
		if c := r.conn; c != nil && (req.ClientSoftwareName != c.software || req.ClientSoftwareVersion != c.softwareVersion) {
			c.software, c.softwareVersion = clip(req.ClientSoftwareName), clip(req.ClientSoftwareVersion)
		}
	}
	return b.apiVersionsResponse(r.version)
}

func (b *Broker) apiVersionsResponse(version int16) *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(version)
	for _, a := range b.apis {
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = a.key, a.min, a.advertised
		if a.advertiseV0 {
			k.MinVersion = 0
		}
		resp.ApiKeys = append(resp.ApiKeys, k)
	}
	if version >= 3 {
		for _, f := range b.features {
			sf := kmsg.NewApiVersionsResponseSupportedFeature()
			sf.Name, sf.MinVersion, sf.MaxVersion = f.name, f.min, f.max
			resp.SupportedFeatures = append(resp.SupportedFeatures, sf)
			if f.lvl > 0 {
				ff := kmsg.NewApiVersionsResponseFinalizedFeature()
				ff.Name, ff.MinVersionLevel, ff.MaxVersionLevel = f.name, f.lvl, f.lvl
				resp.FinalizedFeatures = append(resp.FinalizedFeatures, ff)
			}
		}
		resp.FinalizedFeaturesEpoch = -1
		if len(resp.FinalizedFeatures) > 0 {
			resp.FinalizedFeaturesEpoch = 1
		}
	}
	return resp
}

// servedVersion reports whether ApiVersions advertises key at version.
func (b *Broker) servedVersion(key, version int16) bool {
	a := b.apiByKey[key]
	return a != nil && version >= a.min && version <= a.advertised
}
