package coordinator

// Share groups (KIP-932), administration: the group configs share groups
// read (share.auto.offset.reset and the others Kafka 4.2 takes on a GROUP
// config resource), DescribeShareGroupOffsets, AlterShareGroupOffsets,
// DeleteShareGroupOffsets, and inspection.

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Share group configs, as Kafka 4.2's GroupConfig names them.
const (
	ShareAutoOffsetReset     = "share.auto.offset.reset"
	ShareIsolationLevel      = "share.isolation.level"
	ShareRecordLockDuration  = "share.record.lock.duration.ms"
	ShareDeliveryCountLimit  = "share.delivery.count.limit"
	SharePartitionMaxLocks   = "share.partition.max.record.locks"
	ShareSessionTimeoutMs    = "share.session.timeout.ms"
	ShareHeartbeatIntervalMs = "share.heartbeat.interval.ms"
)

// MaxGroupConfigs bounds the groups that have configs of their own (a
// guard of vastfake's; Kafka keeps them in its metadata log): one more
// group's IncrementalAlterConfigs gets INVALID_CONFIG until configs are
// deleted, with their group (DeleteGroups) or key by key.
const MaxGroupConfigs = 10_000

// groupConfigBounds are the values Kafka 4.2 accepts for the numeric group
// configs (its group.share.min.* and group.share.max.* defaults).
var groupConfigBounds = map[string][2]int64{
	ShareRecordLockDuration:  {15_000, 60_000},
	ShareDeliveryCountLimit:  {2, 10},
	SharePartitionMaxLocks:   {100, 10_000},
	ShareSessionTimeoutMs:    {45_000, 60_000},
	ShareHeartbeatIntervalMs: {5_000, 15_000},
}

// GroupConfigNames returns the group configs vastfake takes, sorted.
func GroupConfigNames() []string {
	return []string{ShareDeliveryCountLimit, ShareAutoOffsetReset, ShareHeartbeatIntervalMs, ShareIsolationLevel,
		SharePartitionMaxLocks, ShareRecordLockDuration, ShareSessionTimeoutMs}
}

// byDuration is share.auto.offset.reset's by_duration:<ISO-8601 duration>.
var byDuration = regexp.MustCompile(`^by_duration:P(?:(\d{1,6})D)?(?:T(?:(\d{1,8})H)?(?:(\d{1,10})M)?(?:(\d{1,12})(?:\.(\d{1,9}))?S)?)?$`)

// parseByDuration reads by_duration:PnDTnHnMn.nS.
func parseByDuration(v string) (time.Duration, bool) {
	m := byDuration.FindStringSubmatch(v)
	if m == nil || v == "by_duration:P" || strings.HasSuffix(v, "T") {
		return 0, false
	}
	var d time.Duration
	for i, unit := range []time.Duration{24 * time.Hour, time.Hour, time.Minute, time.Second} {
		if m[i+1] != "" {
			n, _ := strconv.ParseInt(m[i+1], 10, 64)
			d += time.Duration(n) * unit
		}
	}
	if m[5] != "" {
		frac := m[5] + strings.Repeat("0", 9-len(m[5]))
		n, _ := strconv.ParseInt(frac, 10, 64)
		d += time.Duration(n)
	}
	return d, d >= 0
}

// checkGroupConfig validates one group config as Kafka's GroupConfig does
// and returns INVALID_CONFIG's message, or "".
func (c *Coordinator) checkGroupConfig(name, v string) string {
	switch name {
	case ShareAutoOffsetReset:
		if v == "earliest" || v == "latest" {
			return ""
		}
		if _, ok := parseByDuration(v); ok {
			return ""
		}
		return "Invalid value " + clipQuoted(v) + " for configuration " + name + ": must be earliest, latest or by_duration:<ISO-8601 duration>."
	case ShareIsolationLevel:
		if v == "read_committed" || v == "read_uncommitted" {
			return ""
		}
		return "Invalid value " + clipQuoted(v) + " for configuration " + name + ": must be read_committed or read_uncommitted."
	}
	b, ok := groupConfigBounds[name]
	if !ok {
		return "Unknown group config name: " + clipQuoted(name) + " (vastfake takes " + strings.Join(GroupConfigNames(), ", ") + ")."
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return "Invalid value " + clipQuoted(v) + " for configuration " + name + ": Not a number of type INT."
	}
	lo, hi := b[0], b[1]
	if def := c.groupConfigDefault(name); def < lo {
		lo = def // a broker set below Kafka's bound accepts its own value
	} else if def > hi {
		hi = def
	}
	if n < lo || n > hi {
		return fmt.Sprintf("Invalid value %d for configuration %s: Value must be at least %d and at most %d.", n, name, lo, hi)
	}
	return ""
}

// groupConfigDefault is the broker's value of a numeric group config.
func (c *Coordinator) groupConfigDefault(name string) int64 {
	switch name {
	case ShareRecordLockDuration:
		return c.share.RecordLockDuration.Milliseconds()
	case ShareDeliveryCountLimit:
		return int64(c.share.DeliveryCountLimit)
	case SharePartitionMaxLocks:
		return int64(c.share.PartitionMaxRecordLocks)
	case ShareSessionTimeoutMs:
		return c.share.SessionTimeout.Milliseconds()
	case ShareHeartbeatIntervalMs:
		return c.share.HeartbeatInterval.Milliseconds()
	}
	return 0
}

// GroupConfigs returns the configs set on group (IncrementalAlterConfigs
// on a GROUP resource), whether or not the group exists, as a copy.
func (c *Coordinator) GroupConfigs(group string) map[string]string {
	c.mu.Lock()
	defer c.unlock()
	return maps.Clone(c.groupConfigs[group])
}

// SetGroupConfigs replaces the configs set on group with set, after
// validating each as Kafka 4.2 does (INVALID_CONFIG for an unknown name
// or a value out of bounds, and for a heartbeat interval not below the
// session timeout); with validateOnly it changes nothing. A group with
// no config left forgets them; one more group past MaxGroupConfigs gets
// INVALID_CONFIG. The group need not exist, as in Kafka.
func (c *Coordinator) SetGroupConfigs(group string, set map[string]string, validateOnly bool) (int16, string) {
	c.mu.Lock()
	defer c.unlock()
	if blank(group) {
		return kerr.InvalidRequest.Code, "Group name can't be empty."
	}
	if len(group) > MaxGroupIDBytes {
		return kerr.InvalidGroupID.Code, "GroupId is longer than 32767 bytes."
	}
	names := slices.Sorted(maps.Keys(set))
	for _, name := range names {
		if msg := c.checkGroupConfig(name, set[name]); msg != "" {
			return kerr.InvalidConfig.Code, msg
		}
	}
	get := func(name string) int64 {
		if v, ok := set[name]; ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
		return c.groupConfigDefault(name)
	}
	if get(ShareHeartbeatIntervalMs) >= get(ShareSessionTimeoutMs) {
		return kerr.InvalidConfig.Code, ShareHeartbeatIntervalMs + " must be less than " + ShareSessionTimeoutMs + "."
	}
	if _, had := c.groupConfigs[group]; !had && len(set) > 0 && len(c.groupConfigs) >= MaxGroupConfigs {
		return kerr.InvalidConfig.Code, fmt.Sprintf("vastfake keeps configs for at most %d groups: delete some groups' configs first.", MaxGroupConfigs)
	}
	if validateOnly {
		return errNone, ""
	}
	if len(set) == 0 {
		delete(c.groupConfigs, group)
		return errNone, ""
	}
	if c.groupConfigs == nil {
		c.groupConfigs = make(map[string]map[string]string)
	}
	c.groupConfigs[group] = maps.Clone(set)
	return errNone, ""
}

// GroupConfigEntry is one config of a GROUP resource, as DescribeConfigs
// reports it.
type GroupConfigEntry struct {
	Name, Value string
	// Set is true for a config set on the group, false for the broker's
	// default.
	Set bool
}

// DescribeGroupConfigs returns group's configs, each set one and the
// broker's default for the others, sorted by name; names, when not
// empty, chooses which.
func (c *Coordinator) DescribeGroupConfigs(group string, names []string) []GroupConfigEntry {
	c.mu.Lock()
	defer c.unlock()
	set := c.groupConfigs[group]
	var out []GroupConfigEntry
	for _, name := range GroupConfigNames() {
		if len(names) > 0 && !slices.Contains(names, name) {
			continue
		}
		if v, ok := set[name]; ok {
			out = append(out, GroupConfigEntry{name, v, true})
			continue
		}
		v := "latest"
		switch name {
		case ShareIsolationLevel:
			v = "read_uncommitted"
		case ShareAutoOffsetReset:
		default:
			v = strconv.FormatInt(c.groupConfigDefault(name), 10)
		}
		out = append(out, GroupConfigEntry{name, v, false})
	}
	return out
}

// shareSettings are the share settings in force for one group: the
// broker's, with the group's configs over them.
type shareSettings struct {
	session, heartbeat, lock time.Duration
	delivery                 int16
	locks                    int64
	reset                    string        // earliest, latest or by_duration
	resetBefore              time.Duration // by_duration's
	committed                bool          // share.isolation.level=read_committed
}

// shareSetting returns the settings of group. Call it with c.mu held.
func (c *Coordinator) shareSetting(group string) shareSettings {
	s := shareSettings{
		session: c.share.SessionTimeout, heartbeat: c.share.HeartbeatInterval, lock: c.share.RecordLockDuration,
		delivery: int16(min(c.share.DeliveryCountLimit, 1<<15-1)), locks: int64(c.share.PartitionMaxRecordLocks), reset: "latest",
	}
	for name, v := range c.groupConfigs[group] {
		n, _ := strconv.ParseInt(v, 10, 64)
		switch name {
		case ShareSessionTimeoutMs:
			s.session = time.Duration(n) * time.Millisecond
		case ShareHeartbeatIntervalMs:
			s.heartbeat = time.Duration(n) * time.Millisecond
		case ShareRecordLockDuration:
			s.lock = time.Duration(n) * time.Millisecond
		case ShareDeliveryCountLimit:
			s.delivery = int16(n)
		case SharePartitionMaxLocks:
			s.locks = n
		case ShareIsolationLevel:
			s.committed = v == "read_committed"
		case ShareAutoOffsetReset:
			s.reset = v
			if d, ok := parseByDuration(v); ok {
				s.reset, s.resetBefore = "by_duration", d
			}
		}
	}
	return s
}

// shareLimits returns what a share partition of group acts on.
func (c *Coordinator) shareLimits(group string) shareLimits {
	s := c.shareSetting(group)
	return shareLimits{lock: s.lock, delivery: s.delivery, locks: s.locks}
}

// ---- offsets admin ----

// DescribeShareGroupOffsets answers DescribeShareGroupOffsets v0-v1
// (KIP-932, KIP-1226): per partition the share-partition start offset,
// the leader epoch and (v1) the lag, the records from the start offset to
// the end not yet delivered completely; StartOffset and Lag are -1 for a
// partition the group has no state for, or whose topic does not exist.
// Topics nil describes every partition the group has state for. A group
// that does not exist, or is not a share group, gets GROUP_ID_NOT_FOUND.
func (c *Coordinator) DescribeShareGroupOffsets(req *kmsg.DescribeShareGroupOffsetsRequest, slog ShareLog) *kmsg.DescribeShareGroupOffsetsResponse {
	c.mu.Lock()
	defer c.unlock()
	resp := kmsg.NewPtrDescribeShareGroupOffsetsResponse()
	resp.Version = req.Version
	for _, rg := range req.Groups {
		dg := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
		dg.GroupID = rg.GroupID
		g := c.lookup(rg.GroupID)
		switch {
		case c.closed:
			dg.ErrorCode = kerr.CoordinatorNotAvailable.Code
		case g == nil:
			dg.ErrorCode, dg.ErrorMessage = kerr.GroupIDNotFound.Code, kmsg.StringPtr("Group "+clipQuoted(rg.GroupID)+" not found.")
		case g.sg == nil:
			dg.ErrorCode, dg.ErrorMessage = kerr.GroupIDNotFound.Code, kmsg.StringPtr("Group "+clipQuoted(rg.GroupID)+" is not a share group.")
		default:
			topics := rg.Topics
			if topics == nil {
				topics = c.shareStateTopics(g)
			}
			set := c.shareSetting(g.name)
			seen := map[string]bool{}
			for _, rt := range topics {
				if seen[rt.Topic] {
					continue
				}
				seen[rt.Topic] = true
				dt := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
				dt.Topic = rt.Topic
				meta, exists := c.topics[rt.Topic]
				dt.TopicID = meta.ID
				done := map[int32]bool{}
				for _, p := range rt.Partitions {
					if done[p] {
						continue
					}
					done[p] = true
					dp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
					dp.Partition = p
					dp.StartOffset, dp.Lag, dp.LeaderEpoch = -1, -1, -1
					sp := g.sg.partitions[tpid{meta.ID, p}]
					if exists && p >= 0 && p < meta.Partitions {
						logStart, end, epoch := slog.Offsets(rt.Topic, p, set.committed)
						dp.LeaderEpoch = epoch
						if sp != nil {
							sp.moveStart(logStart)
							dp.StartOffset = sp.start
							dp.Lag = max(end-sp.start-sp.finishedInFlight(), 0)
						}
					}
					dt.Partitions = append(dt.Partitions, dp)
				}
				dg.Topics = append(dg.Topics, dt)
			}
		}
		resp.Groups = append(resp.Groups, dg)
	}
	return resp
}

// finishedInFlight counts the in-flight records whose delivery is complete
// (acknowledged or archived, behind a record still in delivery).
func (sp *sharePartition) finishedInFlight() int64 {
	n := int64(0)
	for i := range sp.runs {
		if sp.runs[i].state.final() {
			n += sp.runs[i].len()
		}
	}
	return n
}

// shareStateTopics lists the partitions g has share state for, by topic
// name, sorted.
func (c *Coordinator) shareStateTopics(g *group) []kmsg.DescribeShareGroupOffsetsRequestGroupTopic {
	byTopic := map[string][]int32{}
	for k := range g.sg.partitions {
		if name, ok := c.topicIDs[k.id]; ok {
			byTopic[name] = append(byTopic[name], k.part)
		}
	}
	out := make([]kmsg.DescribeShareGroupOffsetsRequestGroupTopic, 0, len(byTopic))
	for _, name := range slices.Sorted(maps.Keys(byTopic)) {
		ps := byTopic[name]
		slices.Sort(ps)
		out = append(out, kmsg.DescribeShareGroupOffsetsRequestGroupTopic{Topic: name, Partitions: ps})
	}
	return out
}

// AlterShareGroupOffsets answers AlterShareGroupOffsets v0 (KIP-932): it
// sets the start offset of the partitions named, forgetting every record
// in flight and its delivery count, creating the share group when it does
// not exist, as Kafka 4.2 does. A group with members gets NON_EMPTY_GROUP,
// a classic or consumer group GROUP_ID_NOT_FOUND; a partition of a topic
// that does not exist UNKNOWN_TOPIC_OR_PARTITION, and a negative start
// offset INVALID_REQUEST. caller is told of a group it creates.
func (c *Coordinator) AlterShareGroupOffsets(caller Caller, req *kmsg.AlterShareGroupOffsetsRequest) *kmsg.AlterShareGroupOffsetsResponse {
	c.mu.Lock()
	defer c.unlock()
	resp := kmsg.NewPtrAlterShareGroupOffsetsResponse()
	resp.Version = req.Version
	fail := func(code int16, msg string) *kmsg.AlterShareGroupOffsetsResponse {
		resp.ErrorCode = code
		if msg != "" {
			resp.ErrorMessage = kmsg.StringPtr(msg)
		}
		return resp
	}
	switch {
	case c.closed:
		return fail(kerr.CoordinatorNotAvailable.Code, "")
	case blank(req.GroupID):
		return fail(kerr.InvalidGroupID.Code, "")
	case len(req.GroupID) > MaxGroupIDBytes:
		return fail(kerr.InvalidGroupID.Code, "GroupId is longer than 32767 bytes.")
	}
	g, code, msg := c.shareGroupOf(caller, req.GroupID, true)
	if g == nil {
		return fail(code, msg)
	}
	if len(g.sg.members) > 0 {
		return fail(kerr.NonEmptyGroup.Code, "The share group has members: offsets can be altered only in an empty share group.")
	}
	seen := map[string]int{}
	for _, rt := range req.Topics {
		i, ok := seen[rt.Topic]
		if !ok {
			i = len(resp.Topics)
			seen[rt.Topic] = i
			t := kmsg.NewAlterShareGroupOffsetsResponseTopic()
			t.Topic = rt.Topic
			resp.Topics = append(resp.Topics, t)
		}
		dt := &resp.Topics[i]
		meta, exists := c.topics[rt.Topic]
		dt.TopicID = meta.ID
		for _, rp := range rt.Partitions {
			if slices.ContainsFunc(dt.Partitions, func(p kmsg.AlterShareGroupOffsetsResponseTopicPartition) bool { return p.Partition == rp.Partition }) {
				continue
			}
			dp := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
			dp.Partition = rp.Partition
			switch {
			case !exists || rp.Partition < 0 || rp.Partition >= meta.Partitions:
				dp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case rp.StartOffset < 0:
				dp.ErrorCode = kerr.InvalidRequest.Code
				dp.ErrorMessage = kmsg.StringPtr("StartOffset must not be negative.")
			default:
				k := tpid{meta.ID, rp.Partition}
				sp := g.sg.partitions[k]
				if sp == nil {
					sp = &sharePartition{topic: rt.Topic, part: rp.Partition}
					g.sg.partitions[k] = sp
				}
				sp.reset(rp.StartOffset)
				sp.acknowledged, sp.archived = 0, 0
			}
			dt.Partitions = append(dt.Partitions, dp)
		}
	}
	c.expiryChanged(g)
	c.shareRecordsAvailable()
	return resp
}

// DeleteShareGroupOffsets answers DeleteShareGroupOffsets v0 (KIP-932): it
// forgets the group's state of every partition of the topics named, so that
// its start offset is chosen again (share.auto.offset.reset) on the next
// fetch. A group that does not exist, or is not a share group, gets
// GROUP_ID_NOT_FOUND; one with members NON_EMPTY_GROUP; a topic that does
// not exist UNKNOWN_TOPIC_OR_PARTITION.
func (c *Coordinator) DeleteShareGroupOffsets(req *kmsg.DeleteShareGroupOffsetsRequest) *kmsg.DeleteShareGroupOffsetsResponse {
	c.mu.Lock()
	defer c.unlock()
	resp := kmsg.NewPtrDeleteShareGroupOffsetsResponse()
	resp.Version = req.Version
	fail := func(code int16, msg string) *kmsg.DeleteShareGroupOffsetsResponse {
		resp.ErrorCode = code
		if msg != "" {
			resp.ErrorMessage = kmsg.StringPtr(msg)
		}
		return resp
	}
	if c.closed {
		return fail(kerr.CoordinatorNotAvailable.Code, "")
	}
	g, code, msg := c.shareGroupOf(NoCaller, req.GroupID, false)
	if g == nil {
		return fail(code, msg)
	}
	if len(g.sg.members) > 0 {
		return fail(kerr.NonEmptyGroup.Code, "The share group has members: offsets can be deleted only in an empty share group.")
	}
	seen := map[string]bool{}
	for _, rt := range req.Topics {
		if seen[rt.Topic] {
			continue
		}
		seen[rt.Topic] = true
		dt := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
		dt.Topic = rt.Topic
		meta, exists := c.topics[rt.Topic]
		dt.TopicID = meta.ID
		if !exists {
			dt.ErrorCode = kerr.UnknownTopicOrPartition.Code
		} else {
			for k, sp := range g.sg.partitions {
				if k.id == meta.ID {
					sp.stopTimer()
					delete(g.sg.partitions, k)
				}
			}
		}
		resp.Topics = append(resp.Topics, dt)
	}
	c.expiryChanged(g)
	return resp
}

// ---- inspection ----

// SharePartitionInfo is a share group's state of one partition.
type SharePartitionInfo struct {
	Topic     string
	Partition int32
	// StartOffset is the share-partition start offset: every record
	// before it is acknowledged or archived. EndOffset is one past the
	// last record read into flight.
	StartOffset int64
	EndOffset   int64
	// InFlight counts the records tracked from StartOffset to EndOffset,
	// Available those that may be acquired (again).
	InFlight  int64
	Available int64
	// Acquired are the records members hold, as runs of one member,
	// delivery count and lock deadline.
	Acquired []AcquiredRecords `json:",omitempty"`
	// Acknowledged and Archived count the records accepted, and those
	// rejected or delivered too often, since the state began (or was
	// last reset by AlterShareGroupOffsets).
	Acknowledged int64
	Archived     int64
	// Completed counts the records in flight whose delivery is complete:
	// acknowledged or archived, behind a record still in delivery.
	Completed int64
}

// AcquiredRecords are consecutive records a member holds.
type AcquiredRecords struct {
	FirstOffset, LastOffset int64
	Member                  string
	DeliveryCount           int16
	// LockDeadline is when the acquisition lock ends, on the broker's
	// clock, and the records become available again.
	LockDeadline time.Time
}

// Done reports whether every record of the partition up to offset upTo
// has completed delivery (acknowledged or archived): the start offset has
// passed it.
func (p SharePartitionInfo) Done(upTo int64) bool { return p.StartOffset > upTo }

// shareInfo fills the share group parts of a GroupInfo.
func (c *Coordinator) shareInfo(g *group, gi *GroupInfo) {
	sg := g.sg
	gi.Type = "share"
	gi.State = sg.stateName()
	gi.ProtocolType = "share"
	gi.Protocol = ShareAssignor
	gi.Generation = sg.epoch
	gi.GroupEpoch = sg.epoch
	gi.AssignmentEpoch = sg.epoch
	gi.Members = nil
	for _, m := range sg.ordered() {
		mi := MemberInfo{MemberID: m.id, ClientID: m.clientID, ClientHost: m.clientHost, MemberEpoch: m.epoch,
			Subscribed: slices.Clone(m.names), Current: c.partitionsOf(m.assigned), Target: c.partitionsOf(m.assigned),
			Heartbeat: m.lastBeat}
		gi.Members = append(gi.Members, mi)
	}
	for k, sp := range sg.partitions {
		topic := sp.topic
		if name, ok := c.topicIDs[k.id]; ok {
			topic = name
		}
		pi := SharePartitionInfo{Topic: topic, Partition: k.part, StartOffset: sp.start, EndOffset: sp.end,
			InFlight: sp.records, Acknowledged: sp.acknowledged, Archived: sp.archived, Completed: sp.finishedInFlight()}
		for _, r := range sp.runs {
			switch r.state {
			case recordAvailable:
				pi.Available += r.len()
			case recordAcquired:
				pi.Acquired = append(pi.Acquired, AcquiredRecords{FirstOffset: r.first, LastOffset: r.last, Member: r.owner,
					DeliveryCount: r.deliveries, LockDeadline: r.deadline})
			}
		}
		gi.SharePartitions = append(gi.SharePartitions, pi)
	}
	sort.Slice(gi.SharePartitions, func(i, j int) bool {
		a, b := gi.SharePartitions[i], gi.SharePartitions[j]
		if a.Topic != b.Topic {
			return a.Topic < b.Topic
		}
		return a.Partition < b.Partition
	})
}
