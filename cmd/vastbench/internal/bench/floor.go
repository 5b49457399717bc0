package bench

// The floor: a broker that does as little as a Kafka broker can and still
// serve a franz-go producer and consumer group, so that a benchmark can
// tell the client's cost from the broker's. It acknowledges produce
// requests by counting their records without storing them, and answers
// fetches from pre-encoded batches of 100-byte values.
//
// What the client does is what it does against Kafka: the floor speaks
// the protocol versions vastfake does where they change the client's round
// trips (a member id first, as KIP-394 has every Kafka broker since 2.2
// ask; OffsetFetch v9, after which franz-go looks the topic up), and its
// fetch answers are shaped as Kafka's: whole batches of the records the
// producers' batches held (a broker cannot split one), as many as fit the
// partition's byte limit. Only the broker's own work is left out.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/bits"
	"net"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/vastfake/vastfake/broker"
)

// floorBatchRecords is the most records one of the floor's pre-encoded
// batches holds. The floor keeps one batch of each power of two up to it
// and answers a produced batch of n records with the ones n's binary digits
// name (1,000 records as 512, 256, 128, 64, 32 and 8): the same records and
// nearly the same bytes, from ten pre-encoded batches.
const floorBatchRecords = 1 << floorBatchBits

const floorBatchBits = 9

// floorEmptyFetchDelay paces empty fetch answers as vastfake's default
// empty fetch delay does, so that the idle cost of the two compares.
const floorEmptyFetchDelay = broker.DefaultEmptyFetchDelay

// Floor is the do-nothing broker. Start it with StartFloor.
type Floor struct {
	ln   net.Listener
	host string
	port int32

	mu     sync.Mutex
	topics map[string][]*floorPartition
	groups map[string]int32 // generation per group
	nextID atomic.Int64

	freeMu sync.Mutex
	free   [][]byte // buffers kept for reuse (take, give)

	batchMu sync.Mutex
	batches [floorBatchBits + 1][]byte // pre-encoded batches of 1, 2, 4 … floorBatchRecords records

	wg     sync.WaitGroup
	connMu sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
}

// StartFloor starts a floor broker on a free loopback port.
func StartFloor() (*Floor, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	host, port, _ := net.SplitHostPort(ln.Addr().String())
	p, _ := strconv.Atoi(port)
	f := &Floor{ln: ln, host: host, port: int32(p), topics: map[string][]*floorPartition{},
		groups: map[string]int32{}, conns: map[net.Conn]struct{}{}}
	f.wg.Add(1)
	go f.accept()
	return f, nil
}

// Addr is the floor's address, host:port.
func (f *Floor) Addr() string { return f.ln.Addr().String() }

// Close stops the floor and waits for its connections to end.
func (f *Floor) Close() {
	f.ln.Close()
	f.connMu.Lock()
	f.closed = true
	for c := range f.conns {
		c.Close()
	}
	f.connMu.Unlock()
	f.wg.Wait()
}

func (f *Floor) accept() {
	defer f.wg.Done()
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.connMu.Lock()
		if f.closed {
			f.connMu.Unlock()
			c.Close()
			return
		}
		f.conns[c] = struct{}{}
		f.wg.Add(1)
		f.connMu.Unlock()
		go func() {
			defer f.wg.Done()
			f.serve(c)
			f.connMu.Lock()
			delete(f.conns, c)
			f.connMu.Unlock()
			c.Close()
		}()
	}
}

// floorConn is what one connection's request borrowed from the floor's
// free buffers, given back once it is answered.
type floorConn struct {
	borrowed [][]byte
}

// take returns an empty buffer with room for n bytes: the smallest free
// one the floor has used before that is large enough (its pages are in
// memory), else a new one of the next power of two, which later requests
// of about the same size can reuse.
func (f *Floor) take(n int) []byte {
	f.freeMu.Lock()
	defer f.freeMu.Unlock()
	best := -1
	for i, b := range f.free {
		if cap(b) >= n && (best < 0 || cap(b) < cap(f.free[best])) {
			best = i
		}
	}
	if best < 0 {
		return make([]byte, 0, 1<<bits.Len(uint(max(n, 1)-1)))
	}
	b := f.free[best]
	f.free[best] = f.free[len(f.free)-1]
	f.free = f.free[:len(f.free)-1]
	return b[:0]
}

// give keeps b for reuse, up to floorFreeBuffers buffers.
func (f *Floor) give(b []byte) {
	f.freeMu.Lock()
	defer f.freeMu.Unlock()
	if len(f.free) < floorFreeBuffers {
		f.free = append(f.free, b)
	}
}

// floorFreeBuffers is how many buffers the floor keeps for reuse: a
// request frame, an answer and its batches for a few connections at once.
const floorFreeBuffers = 16

func (f *Floor) serve(c net.Conn) {
	fc := &floorConn{}
	var size [4]byte
	for {
		if _, err := io.ReadFull(c, size[:]); err != nil {
			return
		}
		n := int(binary.BigEndian.Uint32(size[:]))
		if n < 8 || n > 100<<20 {
			return
		}
		frame := f.take(n)[:n]
		if _, err := io.ReadFull(c, frame); err != nil {
			return
		}
		err := f.handle(c, fc, frame)
		f.give(frame)
		for _, b := range fc.borrowed {
			f.give(b)
		}
		fc.borrowed = fc.borrowed[:0]
		if err != nil {
			return
		}
	}
}

// handle decodes one request frame with kmsg, answers it and writes the
// answer.
func (f *Floor) handle(c net.Conn, fc *floorConn, frame []byte) error {
	key := int16(binary.BigEndian.Uint16(frame[0:]))
	version := int16(binary.BigEndian.Uint16(frame[2:]))
	corr := binary.BigEndian.Uint32(frame[4:])
	kreq := kmsg.RequestForKey(key)
	if kreq == nil {
		return fmt.Errorf("unknown api key %d", key)
	}
	kreq.SetVersion(version)
	body := frame[8:]
	// Request header v1: a nullable client id; v2 (flexible) adds tags.
	idLen := int16(binary.BigEndian.Uint16(body))
	body = body[2:]
	if idLen > 0 {
		body = body[idLen:]
	}
	if kreq.IsFlexible() {
		if len(body) == 0 || body[0] != 0 {
			return errors.New("request header tags are not supported")
		}
		body = body[1:]
	}
	if err := kreq.ReadFrom(body); err != nil {
		return err
	}
	resp := f.answer(fc, kreq)
	if resp == nil {
		return nil // acks=0
	}
	resp.SetVersion(version)
	size := 1 << 10
	for _, b := range fc.borrowed {
		size += len(b) // a fetch's batches
	}
	out := append(f.take(size), 0, 0, 0, 0)
	out = binary.BigEndian.AppendUint32(out, corr)
	if resp.IsFlexible() && key != int16(kmsg.ApiVersions) {
		out = append(out, 0)
	}
	out = resp.AppendTo(out)
	binary.BigEndian.PutUint32(out, uint32(len(out)-4))
	_, err := c.Write(out)
	fc.borrowed = append(fc.borrowed, out)
	return err
}

// floorVersions are the versions the floor advertises: the ones franz-go
// uses against VAST, whose response fields the floor fills.
var floorVersions = []struct{ key, min, max int16 }{
	{int16(kmsg.Produce), 3, 9},
	{int16(kmsg.Fetch), 4, 12},
	{int16(kmsg.ListOffsets), 1, 7},
	{int16(kmsg.Metadata), 1, 12},
	{int16(kmsg.OffsetCommit), 2, 8},
	{int16(kmsg.OffsetFetch), 1, 9},
	{int16(kmsg.FindCoordinator), 1, 3},
	{int16(kmsg.JoinGroup), 2, 9},
	{int16(kmsg.Heartbeat), 1, 4},
	{int16(kmsg.LeaveGroup), 1, 4},
	{int16(kmsg.SyncGroup), 1, 5},
	{int16(kmsg.ApiVersions), 0, 3},
	{int16(kmsg.CreateTopics), 2, 7},
}

func (f *Floor) answer(fc *floorConn, kreq kmsg.Request) kmsg.Response {
	switch req := kreq.(type) {
	case *kmsg.ApiVersionsRequest:
		resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
		for _, v := range floorVersions {
			k := kmsg.NewApiVersionsResponseApiKey()
			k.ApiKey, k.MinVersion, k.MaxVersion = v.key, v.min, v.max
			resp.ApiKeys = append(resp.ApiKeys, k)
		}
		return resp
	case *kmsg.MetadataRequest:
		return f.metadata(req)
	case *kmsg.CreateTopicsRequest:
		resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
		f.mu.Lock()
		for _, rt := range req.Topics {
			st := kmsg.NewCreateTopicsResponseTopic()
			st.Topic, st.NumPartitions, st.ReplicationFactor = rt.Topic, rt.NumPartitions, 1
			if _, ok := f.topics[rt.Topic]; ok {
				st.ErrorCode = kerr.TopicAlreadyExists.Code
			} else if !req.ValidateOnly {
				ps := make([]*floorPartition, max(rt.NumPartitions, 1))
				for i := range ps {
					ps[i] = new(floorPartition)
				}
				f.topics[rt.Topic] = ps
			}
			resp.Topics = append(resp.Topics, st)
		}
		f.mu.Unlock()
		return resp
	case *kmsg.ProduceRequest:
		return f.produce(req)
	case *kmsg.FetchRequest:
		return f.fetch(fc, req)
	case *kmsg.ListOffsetsRequest:
		resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewListOffsetsResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewListOffsetsResponseTopicPartition()
				sp.Partition, sp.LeaderEpoch, sp.Timestamp, sp.Offset = rp.Partition, 0, -1, 0
				if p := f.partition(rt.Topic, rp.Partition); p == nil {
					sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				} else if rp.Timestamp == -1 {
					sp.Offset = p.highWatermark()
				}
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp
	case *kmsg.FindCoordinatorRequest:
		resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
		resp.NodeID, resp.Host, resp.Port = 0, f.host, f.port
		return resp
	case *kmsg.JoinGroupRequest:
		// Every group has one member: the joiner leads it alone, once it
		// has asked for a member id as Kafka has it do (KIP-394).
		resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
		member := req.MemberID
		if member == "" {
			member = "m-" + strconv.FormatInt(f.nextID.Add(1), 10)
			if req.Version >= 4 && req.InstanceID == nil { // static members join at once
				resp.ErrorCode, resp.MemberID, resp.Generation = kerr.MemberIDRequired.Code, member, -1
				return resp
			}
		}
		f.mu.Lock()
		f.groups[req.Group]++
		resp.Generation = f.groups[req.Group]
		f.mu.Unlock()
		resp.MemberID, resp.LeaderID = member, member
		if len(req.Protocols) > 0 {
			resp.Protocol = kmsg.StringPtr(req.Protocols[0].Name)
			m := kmsg.NewJoinGroupResponseMember()
			m.MemberID, m.ProtocolMetadata = member, req.Protocols[0].Metadata
			resp.Members = append(resp.Members, m)
		}
		resp.ProtocolType = kmsg.StringPtr(req.ProtocolType)
		return resp
	case *kmsg.SyncGroupRequest:
		resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
		for _, a := range req.GroupAssignment {
			if a.MemberID == req.MemberID {
				resp.MemberAssignment = a.MemberAssignment
			}
		}
		resp.ProtocolType, resp.Protocol = req.ProtocolType, req.Protocol
		return resp
	case *kmsg.HeartbeatRequest:
		return req.ResponseKind()
	case *kmsg.LeaveGroupRequest:
		resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
		for _, m := range req.Members {
			rm := kmsg.NewLeaveGroupResponseMember()
			rm.MemberID, rm.InstanceID = m.MemberID, m.InstanceID
			resp.Members = append(resp.Members, rm)
		}
		return resp
	case *kmsg.OffsetFetchRequest:
		// Nothing is ever committed: every partition has no offset.
		resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewOffsetFetchResponseTopic()
			st.Topic = rt.Topic
			for _, p := range rt.Partitions {
				sp := kmsg.NewOffsetFetchResponseTopicPartition()
				sp.Partition, sp.Offset, sp.LeaderEpoch = p, -1, -1
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		for _, rg := range req.Groups { // v8 and later
			sg := kmsg.NewOffsetFetchResponseGroup()
			sg.Group = rg.Group
			for _, rt := range rg.Topics {
				st := kmsg.NewOffsetFetchResponseGroupTopic()
				st.Topic = rt.Topic
				for _, p := range rt.Partitions {
					sp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
					sp.Partition, sp.Offset, sp.LeaderEpoch = p, -1, -1
					st.Partitions = append(st.Partitions, sp)
				}
				sg.Topics = append(sg.Topics, st)
			}
			resp.Groups = append(resp.Groups, sg)
		}
		return resp
	case *kmsg.OffsetCommitRequest:
		resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewOffsetCommitResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewOffsetCommitResponseTopicPartition()
				sp.Partition = rp.Partition
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp
	}
	return kreq.ResponseKind() // not advertised; answered with zero values
}

// floorPartition is what the floor keeps of a partition: where each
// batch it acknowledged ends, so that a fetch answers records in batches
// of the sizes the producers sent. No record is kept.
type floorPartition struct {
	mu   sync.Mutex
	ends []int64 // the offset after each acknowledged batch, ascending
}

// highWatermark returns the offset after the last acknowledged record.
func (p *floorPartition) highWatermark() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.ends) == 0 {
		return 0
	}
	return p.ends[len(p.ends)-1]
}

// add acknowledges batches of counts records and returns the first one's
// base offset.
func (p *floorPartition) add(counts []int64) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	base := int64(0)
	if len(p.ends) > 0 {
		base = p.ends[len(p.ends)-1]
	}
	end := base
	for _, n := range counts {
		end += n
		p.ends = append(p.ends, end)
	}
	return base
}

// batchEnd returns the end of the acknowledged batch holding offset, or
// offset itself when none does.
func (p *floorPartition) batchEnd(offset int64) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	i := sort.Search(len(p.ends), func(i int) bool { return p.ends[i] > offset })
	if i == len(p.ends) || offset < 0 {
		return offset
	}
	return p.ends[i]
}

// partition returns a partition of the floor, or nil for an unknown one.
func (f *Floor) partition(topic string, partition int32) *floorPartition {
	f.mu.Lock()
	defer f.mu.Unlock()
	ps := f.topics[topic]
	if partition < 0 || int(partition) >= len(ps) {
		return nil
	}
	return ps[partition]
}

func (f *Floor) metadata(req *kmsg.MetadataRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	b := kmsg.NewMetadataResponseBroker()
	b.NodeID, b.Host, b.Port = 0, f.host, f.port
	resp.Brokers = append(resp.Brokers, b)
	resp.ControllerID = 0
	f.mu.Lock()
	defer f.mu.Unlock()
	var names []string
	if req.Topics == nil {
		for name := range f.topics {
			names = append(names, name)
		}
	}
	for _, t := range req.Topics {
		if t.Topic != nil {
			names = append(names, *t.Topic)
		}
	}
	for _, name := range names {
		st := kmsg.NewMetadataResponseTopic()
		st.Topic = kmsg.StringPtr(name)
		ps, ok := f.topics[name]
		if !ok {
			st.ErrorCode = kerr.UnknownTopicOrPartition.Code
		}
		for p := range ps {
			sp := kmsg.NewMetadataResponseTopicPartition()
			sp.Partition, sp.Leader, sp.Replicas, sp.ISR = int32(p), 0, []int32{0}, []int32{0}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

// produce acknowledges every batch by noting its record count; nothing is
// stored.
func (f *Floor) produce(req *kmsg.ProduceRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition, sp.LogAppendTime = rp.Partition, -1
			p := f.partition(rt.Topic, rp.Partition)
			if p == nil {
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			var counts []int64
			for b := rp.Records; len(b) >= 61; {
				size := 12 + int(binary.BigEndian.Uint32(b[8:]))
				// No more records than bytes: a bad count cannot make the
				// floor build a huge answer.
				counts = append(counts, min(int64(binary.BigEndian.Uint32(b[57:])), int64(size)))
				if size > len(b) {
					break
				}
				b = b[size:]
			}
			sp.BaseOffset = p.add(counts)
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if req.Acks == 0 {
		return nil
	}
	return resp
}

// fetch answers each partition below its high watermark with the records
// of the acknowledged batches from the fetch offset on, as many batches as
// fit the partition's byte limit and at least one, and stops adding
// partitions once the answer holds MaxBytes, as Kafka does; each batch is
// answered with pre-encoded batches re-based to its offsets (a fetch inside
// a batch gets the rest of it, where Kafka sends the whole batch for the
// client to skip the records before the offset). An offset outside the log
// gets OFFSET_OUT_OF_RANGE. An answer with no records waits
// floorEmptyFetchDelay (or MaxWait, if shorter) first.
func (f *Floor) fetch(fc *floorConn, req *kmsg.FetchRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	// First what each partition answers, then its batches, in one buffer.
	type answer struct {
		topic, partition int // indexes in resp.Topics and its Partitions
		from, to         int64
	}
	var answers []answer
	total := 0
	for _, rt := range req.Topics {
		st := kmsg.NewFetchResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewFetchResponseTopicPartition()
			sp.Partition, sp.PreferredReadReplica = rp.Partition, -1
			sp.RecordBatches = []byte{}
			p := f.partition(rt.Topic, rp.Partition)
			if p == nil {
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			hw := p.highWatermark()
			sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = hw, hw, 0
			if rp.FetchOffset < 0 || rp.FetchOffset > hw {
				sp.ErrorCode = kerr.OffsetOutOfRange.Code
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			offset, size := rp.FetchOffset, 0
			for offset < hw && (total == 0 || total+size < int(req.MaxBytes)) {
				end := p.batchEnd(offset)
				n := f.batchesSize(end - offset)
				if size > 0 && size+n > int(rp.PartitionMaxBytes) {
					break
				}
				offset, size = end, size+n
			}
			st.Partitions = append(st.Partitions, sp)
			if size > 0 {
				answers = append(answers, answer{len(resp.Topics), len(st.Partitions) - 1, rp.FetchOffset, offset})
				total += size
			}
		}
		resp.Topics = append(resp.Topics, st)
	}
	if total > 0 {
		out := f.take(total)
		for _, a := range answers {
			start := len(out)
			out = f.appendBatches(out, a.from, a.to-a.from)
			resp.Topics[a.topic].Partitions[a.partition].RecordBatches = out[start:len(out):len(out)]
		}
		fc.borrowed = append(fc.borrowed, out)
	}
	if total == 0 && req.MaxWaitMillis > 0 {
		time.Sleep(min(floorEmptyFetchDelay, time.Duration(req.MaxWaitMillis)*time.Millisecond))
	}
	return resp
}

// appendBatches appends batches holding the n records from offset on and
// returns out.
func (f *Floor) appendBatches(out []byte, offset, n int64) []byte {
	for n > 0 {
		k := min(int64(floorBatchRecords), int64(1)<<(bits.Len64(uint64(n))-1))
		start := len(out)
		out = append(out, f.batch(k)...)
		binary.BigEndian.PutUint64(out[start:], uint64(offset))
		offset, n = offset+k, n-k
	}
	return out
}

// batchesSize returns the bytes appendBatches appends for n records.
func (f *Floor) batchesSize(n int64) int {
	size := 0
	for n > 0 {
		k := min(int64(floorBatchRecords), int64(1)<<(bits.Len64(uint64(n))-1))
		size += len(f.batch(k))
		n -= k
	}
	return size
}

// batch returns the pre-encoded batch of n records (a power of two up to
// floorBatchRecords), base offset 0, encoding it the first time.
func (f *Floor) batch(n int64) []byte {
	i := bits.Len64(uint64(n)) - 1
	f.batchMu.Lock()
	defer f.batchMu.Unlock()
	if f.batches[i] == nil {
		f.batches[i] = encodeBatch(int32(n))
	}
	return f.batches[i]
}

// encodeBatch encodes a batch of n records of ValueSize-byte values.
func encodeBatch(n int32) []byte {
	rb := kmsg.NewRecordBatch()
	rb.Magic = 2
	rb.ProducerID, rb.ProducerEpoch, rb.FirstSequence, rb.PartitionLeaderEpoch = -1, -1, -1, 0
	now := time.Now().UnixMilli()
	rb.FirstTimestamp, rb.MaxTimestamp = now, now
	rb.LastOffsetDelta, rb.NumRecords = n-1, n
	value := make([]byte, ValueSize)
	for i := int32(0); i < n; i++ {
		r := kmsg.NewRecord()
		r.OffsetDelta, r.Value = i, value
		r.Length = int32(len(r.AppendTo(nil)) - 1) // Length 0 encodes in one byte
		rb.Records = r.AppendTo(rb.Records)
	}
	out := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(out[8:], uint32(len(out)-12))
	binary.BigEndian.PutUint32(out[17:], crc32.Checksum(out[21:], crc32.MakeTable(crc32.Castagnoli)))
	return out
}
