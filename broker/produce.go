package broker

// Produce and InitProducerID.

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/vastfake/vastfake/coordinator"
	"github.com/vastfake/vastfake/log"
	"github.com/vastfake/vastfake/rules"
)

// pendingAppend is one validated partition of a produce request, waiting to
// be appended with the others.
type pendingAppend struct {
	resp      *kmsg.ProduceResponseTopicPartition
	topic     string
	partition int32
	part      *log.Partition
	batch     log.Batch
	cfg       topicConfig
	gap       log.Gap
	staged    log.Staged
	isStaged  bool
	loan      *log.Loan // set when the batch is staged in its request's frame (clientConn.loanFor)
	// txn, for a transactional batch, says whether its transaction is
	// still open; appendPending asks it just before the append.
	txn coordinator.TxnCheck
}

// stage stages the batch into its partition: in place when the request's
// frame may be kept, else copied.
func (p *pendingAppend) stage() log.Staged {
	if p.loan != nil {
		return p.part.StageInPlace(p.batch, p.loan)
	}
	return p.part.Stage(p.batch)
}

// handleProduce answers Produce v3-v13.
//
// v3 is the first with v2 record batches and transactional ids, v5 adds the
// log start offset, v8 per-record errors and messages, v13 topic IDs. Each
// partition carries exactly one batch (INVALID_RECORD otherwise), checked
// for CRC and length (CORRUPT_MESSAGE), and every record in it is read and
// validated as Kafka's log validator does (INVALID_RECORD; see
// log.Batch.Validate). A compressed batch (kafka profile) is validated as
// it decompresses, once one of the broker's decompression turns is free
// (WithDecompressions), and stored as received; one that does not decompress
// (including a zstd window over log.MaxZstdWindow and snappy with S2
// extensions) gets UNKNOWN_SERVER_ERROR, as Kafka answers, and one that
// decompresses past log.MaxDecompressedBytes MESSAGE_TOO_LARGE. A batch
// larger than the topic's max.message.bytes, or without it the broker's
// message.max.bytes, gets MESSAGE_TOO_LARGE. A batch with a keyless record
// to a topic with cleanup.policy=compact gets INVALID_RECORD, with a record
// error (v8+) for each keyless record, as Kafka's validator answers. The
// base offset is the high watermark unless a gap is due (SkipOffsets,
// WithOffsetGaps). Every partition of one request
// is appended under one lock, so a consumer sees all of the request or none
// of it. acks=0 gets no response; acks 1 and -1 are the same on one broker;
// with several, acks=-1 waits while an in-sync replica is down and not yet
// fenced, up to the request's timeout (insync.go).
// A batch from an idempotent producer (kafka profile) is checked as Kafka
// checks it, per producer id, epoch and partition (log.Producers.Check):
// a retry of one of the producer's last five batches is stored once and
// answered with no error and the first answer's offset; a gap in sequence
// numbers gets OUT_OF_ORDER_SEQUENCE_NUMBER, an old epoch
// INVALID_PRODUCER_EPOCH, and a producer id with a negative sequence
// INVALID_RECORD. As in Kafka since KIP-360, a producer id the partition
// has no state of (new, or expired after producer.id.expiration.ms) may
// start at any sequence, so UNKNOWN_PRODUCER_ID is never answered. A
// transactional batch must be for a partition of its producer's open
// transaction with the producer's current epoch (INVALID_PRODUCER_EPOCH for
// another), as Kafka 3.6+ verifies it with the transaction coordinator
// (KIP-890): from v12 the batch adds its partition to the transaction
// (KIP-890's second part); before, a partition not in it gets
// TRANSACTION_ABORTABLE (v11) or INVALID_TXN_STATE. A transactional batch
// in a request without a transactional id gets
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED for the whole request, as in Kafka.
// A partition named twice is answered once and only its last copy is
// appended, as Kafka's handler collects partitions into a map.
// VAST: no compression (NoCompression), no producer ids or transactions
// (NoIdempotence), size caps on batches, keys and values
// (MaxMessageBytes, which also caps a topic's max.message.bytes;
// MaxKeyBytes/MaxValueBytes), topics never auto-created
// (NoAutoCreateTopics), and the topic's timestamp window.
// Authorizes: KafkaWrite on each topic (TOPIC_AUTHORIZATION_FAILED).
func handleProduce(b *Broker, r *request) kmsg.Response {
	req := mergeProduce(r.kreq.(*kmsg.ProduceRequest), r.version)
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	now := b.clock.Now()
	var pending []pendingAppend
	large := 0                // bytes of accepted batches the log could keep in place
	r.conn.keepFrames = false // until noteProduce finds this request mostly such batches

	if req.Acks != 0 && req.Acks != 1 && req.Acks != -1 {
		return produceError(req, resp, kerr.InvalidRequiredAcks.Code, "")
	}
	if req.TransactionID != nil && b.vast(r, rules.NoIdempotence, rules.Refused, "", "", func() string {
		return "transactional produce (transactional.id " + strconv.Quote(*req.TransactionID) + ")"
	}) {
		return produceError(req, resp, kerr.TransactionalIDAuthorizationFailed.Code, rules.NoIdempotence.Refusal("VAST does not support transactions", noTransactionsAction))
	}

	if req.TransactionID == nil && !b.enforced(rules.NoIdempotence) && hasTransactionalBatch(req) {
		// As Kafka's handler: a transactional batch needs the
		// transactional id it is authorized by.
		return produceError(req, resp, kerr.TransactionalIDAuthorizationFailed.Code, "transactional record batches need the request's transactional id")
	}
	resp.Topics = make([]kmsg.ProduceResponseTopic, len(req.Topics))
	for i := range req.Topics {
		rt := &req.Topics[i]
		st := &resp.Topics[i]
		*st = kmsg.NewProduceResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		var t *topic
		if r.version >= 13 {
			t = b.data.getID(rt.TopicID)
		} else {
			t = b.topicNamed(r, rt.Topic)
		}
		var cfg topicConfig
		name := rt.Topic
		if t != nil {
			cfg, name = t.config(), t.name
		}
		writable := t == nil && r.version >= 13 || b.allowTopic(r, KafkaWrite, name)
		st.Partitions = make([]kmsg.ProduceResponseTopicPartition, len(rt.Partitions))
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			sp := &st.Partitions[j]
			*sp = kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = -1, -1, -1
			if !writable {
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				continue
			}
			part, code := lookupWritable(t, rp.Partition, r.version >= 13)
			if part == nil {
				sp.ErrorCode = code
				continue
			}
			if req.Acks == -1 {
				if sp.ErrorCode = b.minInsyncCode(name, rp.Partition, cfg); sp.ErrorCode != 0 {
					continue
				}
			}
			var keyless log.RecordStats
			batch, code, msg := b.checkBatch(r, name, rp.Records, cfg, now.UnixMilli(), &keyless)
			if msg == keylessMessage {
				msg, sp.ErrorRecords = keylessErrors(keyless, name, rp.Partition)
			}
			if code != 0 {
				sp.ErrorCode = code
				if msg != "" {
					sp.ErrorMessage = kmsg.StringPtr(msg)
				}
				continue
			}
			var txn coordinator.TxnCheck
			if batch.Transactional() {
				if code, msg, txn = b.checkTransactional(*req.TransactionID, r.version, batch, name, rp.Partition); code != 0 {
					sp.ErrorCode, sp.ErrorMessage = code, kmsg.StringPtr(msg)
					continue
				}
			}
			pending = append(pending, pendingAppend{resp: sp, topic: name, partition: rp.Partition, part: part, batch: batch, cfg: cfg, gap: b.cfg.gaps[name], txn: txn})
			if len(batch) >= minKeptBatch {
				large += len(batch)
			}
		}
	}
	if r.conn.noteProduce(large) {
		for i := range pending {
			pending[i].loan = r.conn.loanFor(pending[i].batch)
		}
	}

	if len(pending) > 0 {
		b.appendPending(pending, now)
		b.notifyData()
		if req.Acks == -1 {
			b.awaitInSync(r, req.TimeoutMillis, pending) // a down in-sync replica holds the answer (insync.go)
		}
	}
	return resp
}

// hasTransactionalBatch reports whether any partition of req carries a
// batch whose attributes say it is transactional, read in place, as
// Kafka's RequestUtils.hasTransactionalRecords looks before parsing.
func hasTransactionalBatch(req *kmsg.ProduceRequest) bool {
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			if len(p.Records) >= log.BatchHeaderSize && log.Batch(p.Records).Transactional() {
				return true
			}
		}
	}
	return false
}

// mergeProduce returns req with each topic and partition named once, as
// Kafka's produce handler collects the request into a map of partitions: a
// partition named again is answered once, in its first place, and only its
// last copy's records are appended. It returns req itself when nothing
// repeats.
func mergeProduce(req *kmsg.ProduceRequest, version int16) *kmsg.ProduceRequest {
	topics := mergeTopics(req.Topics,
		func(t *kmsg.ProduceRequestTopic) string {
			if version >= 13 {
				return string(t.TopicID[:])
			}
			return t.Topic
		},
		func(t *kmsg.ProduceRequestTopic) *[]kmsg.ProduceRequestTopicPartition { return &t.Partitions },
		func(p *kmsg.ProduceRequestTopicPartition) int32 { return p.Partition },
		lastOfEach)
	if sameSlice(topics, req.Topics) {
		return req
	}
	merged := *req
	merged.Topics = topics
	return &merged
}

// appendPending appends a request's accepted batches. They are staged into
// their partitions first (copied, or kept in their request's frame: see
// pendingAppend.stage), with no broker-wide lock, so that producers to
// different partitions copy in parallel; then all are published under
// appendMu, so that readers see all of one Produce request or none of it.
// A batch from an idempotent producer is checked against the producer's
// state (see log.Producers.Check) under appendMu too, just before it is
// published, and recorded with it; it is checked once before the copy as
// well, so that retries and refusals cost no copy. The deferred unlock
// keeps a panic in one connection's handler (which closes only that
// connection) from leaving every other producer blocked.
func (b *Broker) appendPending(pending []pendingAppend, now time.Time) {
	idempotent := false
	for i := range pending {
		if pending[i].batch.ProducerID() >= 0 {
			idempotent = true
			continue
		}
		pending[i].staged, pending[i].isStaged = pending[i].stage(), true
	}
	if idempotent {
		b.stageIdempotent(pending)
	}
	b.appendMu.Lock()
	defer b.appendMu.Unlock()
	for i := range pending {
		p := &pending[i]
		if p.txn != nil && !p.txn() { // its transaction ended since the check: see coordinator.TxnCheck
			p.resp.ErrorCode = kerr.InvalidTxnState.Code
			p.resp.ErrorMessage = kmsg.StringPtr("the transaction of producer " + strconv.FormatInt(p.batch.ProducerID(), 10) + " ended before this batch was appended")
			continue
		}
		idempotent := p.batch.ProducerID() >= 0
		if idempotent {
			dup, err := b.producers.Check(p.part, p.batch)
			if answerIdempotent(p, dup, err) {
				continue
			}
			if !p.isStaged { // the producer's state moved since stageIdempotent looked
				p.staged = p.stage()
			}
		}
		p.resp.BaseOffset, p.resp.LogStartOffset = p.part.Publish(p.staged, log.AppendOptions{Now: now, LogAppendTime: p.cfg.logAppendTime, Gap: p.gap})
		maxTS := p.batch.MaxTimestamp()
		if p.cfg.logAppendTime {
			maxTS = now.UnixMilli()
			p.resp.LogAppendTime = maxTS
		}
		if idempotent && !p.part.Released() { // a deleted partition's state would outlive it
			b.producers.Record(p.part, p.batch, p.resp.BaseOffset, maxTS, now)
		}
	}
}

// stageIdempotent copies the batches of idempotent producers that their
// producers' state would append now; a retry or a refused batch is not
// copied. appendPending checks again before publishing.
func (b *Broker) stageIdempotent(pending []pendingAppend) {
	b.appendMu.RLock()
	for i := range pending {
		p := &pending[i]
		if p.batch.ProducerID() < 0 {
			continue
		}
		if dup, err := b.producers.Check(p.part, p.batch); dup == nil && err == nil {
			p.isStaged = true // staged below, outside the lock
		}
	}
	b.appendMu.RUnlock()
	for i := range pending {
		p := &pending[i]
		if p.batch.ProducerID() >= 0 && p.isStaged {
			p.staged = p.stage()
		}
	}
}

// answerIdempotent answers a batch that the producer's state does not let
// append: a retry of a stored batch gets no error and the offset and
// timestamp that batch was stored with, and the log start offset now, as
// Kafka answers it; a refusal gets its error. It reports whether it
// answered.
func answerIdempotent(p *pendingAppend, dup *log.Duplicate, err error) bool {
	switch {
	case dup != nil:
		p.resp.BaseOffset, p.resp.LogAppendTime = dup.BaseOffset, dup.Timestamp
		p.resp.LogStartOffset = p.part.LogStartOffset()
	case errors.Is(err, log.ErrInvalidEpoch):
		p.resp.ErrorCode, p.resp.ErrorMessage = kerr.InvalidProducerEpoch.Code, kmsg.StringPtr(err.Error())
	case err != nil:
		p.resp.ErrorCode, p.resp.ErrorMessage = kerr.OutOfOrderSequenceNumber.Code, kmsg.StringPtr(err.Error())
	default:
		return false
	}
	return true
}

// checkBatch parses one partition's records, validates every record as
// Kafka's log validator does (see log.Batch.Validate) and applies the rules
// and the topic's configs to them. It returns the batch, or the Kafka error
// code and message refusing it (keylessMessage for keyless records to a
// compacted topic, which the caller words as Kafka does from the stats
// left in keyless: a compacted topic's validation lists the first
// maxRecordErrors keyless records as it reads them, within the
// decompression turn).
func (b *Broker) checkBatch(r *request, topic string, raw []byte, cfg topicConfig, nowMs int64, keyless *log.RecordStats) (log.Batch, int16, string) {
	if code, msg := b.checkBatchSize(r, topic, len(raw), cfg); code != 0 {
		return nil, code, msg
	}
	batch, err := log.ParseBatch(raw)
	switch {
	case errors.Is(err, log.ErrCorrupt):
		return nil, kerr.CorruptMessage.Code, ""
	case err != nil:
		return nil, kerr.InvalidRecord.Code, err.Error()
	}
	if batch.Control() {
		return nil, kerr.InvalidRecord.Code, "clients may not produce control batches"
	}
	if c := batch.Compression(); c != 0 && b.vast(r, rules.NoCompression, rules.Refused, topic, "", func() string { return "compressed batch (" + codecName(c) + ")" }) {
		return nil, kerr.UnsupportedCompressionType.Code, rules.NoCompression.Refusal("VAST does not accept compressed batches", "")
	}
	if batch.Compression() > 4 {
		return nil, kerr.UnsupportedCompressionType.Code, ""
	}
	if (batch.ProducerID() >= 0 || batch.Transactional()) && b.vast(r, rules.NoIdempotence, rules.Refused, topic, "", func() string { return producerDetail(batch) }) {
		return nil, kerr.UnsupportedForMessageFormat.Code, rules.NoIdempotence.Refusal("VAST does not support idempotent or transactional producers", "set enable.idempotence=false and remove transactional.id, or run -profile audit to find every place the app relies on them")
	}
	if batch.ProducerID() >= 0 && batch.BaseSequence() < 0 {
		return nil, kerr.InvalidRecord.Code, "invalid sequence number " + strconv.Itoa(int(batch.BaseSequence())) + " in a record batch with producer id " + strconv.FormatInt(batch.ProducerID(), 10)
	}
	if batch.Transactional() && batch.ProducerID() < 0 {
		return nil, kerr.InvalidRecord.Code, "transactional record batch without a producer id"
	}
	if batch.Compression() != 0 {
		if !b.startDecompression(r.ctx.Done()) {
			return nil, kerr.RequestTimedOut.Code, "the connection closed while waiting to decompress"
		}
		defer func() { <-b.decompress }()
	}
	var stats log.RecordStats
	if cfg.compact {
		stats, err = batch.ValidateListingNullKeys(maxRecordErrors)
	} else {
		stats, err = batch.Validate()
	}
	switch {
	case errors.Is(err, log.ErrDecompress):
		return nil, kerr.UnknownServerError.Code, err.Error()
	case errors.Is(err, log.ErrTooLarge):
		return nil, kerr.MessageTooLarge.Code, err.Error()
	case err != nil:
		return nil, kerr.InvalidRecord.Code, err.Error()
	}
	if max := b.rules.MaxKeyBytes; max > 0 && stats.MaxKey > max &&
		b.vast(r, rules.MaxKeyBytes, rules.Refused, topic, "", func() string { return "record key of " + strconv.Itoa(stats.MaxKey) + " bytes" }) {
		return nil, kerr.MessageTooLarge.Code, rules.MaxKeyBytes.Refusal("record key of "+strconv.Itoa(stats.MaxKey)+" bytes is over VAST's "+strconv.Itoa(max)+"-byte limit", "")
	}
	if max := b.rules.MaxValueBytes; max > 0 && stats.MaxValue > max &&
		b.vast(r, rules.MaxValueBytes, rules.Refused, topic, "", func() string { return "record value of " + strconv.Itoa(stats.MaxValue) + " bytes" }) {
		return nil, kerr.MessageTooLarge.Code, rules.MaxValueBytes.Refusal("record value of "+strconv.Itoa(stats.MaxValue)+" bytes is over VAST's "+strconv.Itoa(max)+"-byte limit", "")
	}
	if cfg.compact && stats.NullKeys > 0 {
		*keyless = stats
		return nil, kerr.InvalidRecord.Code, keylessMessage
	}
	if !cfg.logAppendTime && stats.MinTimestamp <= stats.MaxTimestamp {
		for _, ts := range [2]int64{stats.MinTimestamp, stats.MaxTimestamp} {
			if !inWindow(ts, nowMs, cfg) {
				return nil, kerr.InvalidTimestamp.Code, "record timestamp " + strconv.FormatInt(ts, 10) + " is outside the topic's message.timestamp.before/after.max.ms window"
			}
		}
	}
	return batch, 0, ""
}

// startDecompression waits for one of the broker's decompression turns
// (WithDecompressions), which the caller gives back by receiving from
// b.decompress: a produce waits until its connection ends, a compaction
// until the broker closes. It returns false if done is closed first.
func (b *Broker) startDecompression(done <-chan struct{}) bool {
	select {
	case b.decompress <- struct{}{}:
		return true
	default:
	}
	b.decompressWaiting.Add(1)
	defer b.decompressWaiting.Add(-1)
	select {
	case b.decompress <- struct{}{}:
		return true
	case <-done:
		return false
	}
}

// keylessMessage is what checkBatch answers for a batch with keyless
// records to a compacted topic; keylessErrors words it as Kafka does.
const keylessMessage = "keyless records to a compacted topic"

// maxRecordErrors bounds the record errors one partition's answer lists:
// Kafka lists every record its validator refuses, which for a compressed
// batch is unbounded (a few hundred KB of zstd can hold millions of
// records). It is more than an uncompressed batch of Kafka's 1 MiB
// message.max.bytes can hold (records take at least 7 bytes), so those are
// answered as Kafka answers them.
const maxRecordErrors = 1 << 18

// keylessErrors returns Kafka's answer to keyless records in a batch to a
// compacted topic (LogValidator.validateKey): a record error for each of
// them listed in stats (up to maxRecordErrors), v8+, and the message that
// counts all of them and lists the first three.
func keylessErrors(stats log.RecordStats, topic string, partition int32) (string, []kmsg.ProduceResponseTopicPartitionErrorRecord) {
	indexes := stats.NullKeyIndexes
	what := "Compacted topic cannot accept message without key in topic partition " + topic + "-" + strconv.Itoa(int(partition)) + "."
	errs := make([]kmsg.ProduceResponseTopicPartitionErrorRecord, len(indexes))
	shown := make([]string, 0, 3)
	for i, at := range indexes {
		errs[i] = kmsg.NewProduceResponseTopicPartitionErrorRecord()
		errs[i].RelativeOffset, errs[i].ErrorMessage = at, kmsg.StringPtr(what)
		if i < 3 {
			shown = append(shown, "RecordError(batchIndex="+strconv.Itoa(int(at))+", message='"+what+"')")
		}
	}
	msg := "One or more records have been rejected due to " + strconv.Itoa(stats.NullKeys) +
		" record errors in total, and only showing the first three errors at most: [" + strings.Join(shown, ", ") + "]"
	return msg, errs
}

// checkBatchSize refuses a batch larger than the topic allows, as Kafka
// does (MESSAGE_TOO_LARGE): the topic's max.message.bytes when set, else
// the broker's message.max.bytes. An enforced VAST cap (rule
// MaxMessageBytes) bounds both; only a refusal the cap causes is recorded
// as the rule's.
func (b *Broker) checkBatchSize(r *request, topicName string, size int, cfg topicConfig) (int16, string) {
	vastCap := b.rules.MaxMessageBytes
	enforcedCap := vastCap
	if !b.enforced(rules.MaxMessageBytes) {
		enforcedCap = 0
	}
	if topic := cfg.maxMessageBytes; topic >= 0 && size > topic && (enforcedCap <= 0 || topic <= enforcedCap) {
		return kerr.MessageTooLarge.Code, "record batch of " + strconv.Itoa(size) + " bytes is over the topic's max.message.bytes of " + strconv.Itoa(topic)
	}
	if vastCap > 0 && size > vastCap && b.vast(r, rules.MaxMessageBytes, rules.Refused, topicName, "", func() string { return "record batch of " + strconv.Itoa(size) + " bytes" }) {
		return kerr.MessageTooLarge.Code, rules.MaxMessageBytes.Refusal("record batch of "+strconv.Itoa(size)+" bytes is over VAST's "+strconv.Itoa(vastCap)+"-byte limit", "")
	}
	if cfg.maxMessageBytes < 0 && enforcedCap <= 0 && size > rules.KafkaMessageMaxBytes {
		return kerr.MessageTooLarge.Code, "record batch of " + strconv.Itoa(size) + " bytes is over the broker's message.max.bytes of " + strconv.Itoa(rules.KafkaMessageMaxBytes)
	}
	return 0, ""
}

// inWindow applies message.timestamp.before.max.ms and
// message.timestamp.after.max.ms to one CreateTime timestamp.
func inWindow(ts, nowMs int64, cfg topicConfig) bool {
	if ts < nowMs && nowMs-ts > cfg.beforeMaxMs {
		return false
	}
	if ts > nowMs && ts-nowMs > cfg.afterMaxMs {
		return false
	}
	return true
}

// produceError answers every partition of a request with one error.
func produceError(req *kmsg.ProduceRequest, resp *kmsg.ProduceResponse, code int16, msg string) kmsg.Response {
	for _, rt := range req.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		for _, rp := range rt.Partitions {
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition, sp.ErrorCode = rp.Partition, code
			sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = -1, -1, -1
			if msg != "" {
				sp.ErrorMessage = kmsg.StringPtr(msg)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

// handleInitProducerID answers InitProducerID v0-v5, served in the kafka
// and audit profiles. Without a transactional id (an idempotent producer)
// each call gets a new producer id with epoch 0, as Kafka's transaction
// coordinator answers a request without a transactional id, even one naming
// the producer's current id and epoch (KIP-360): an idempotent producer
// that needs a fresh epoch either asks again or bumps its epoch itself, and
// Produce accepts a bumped epoch that starts at sequence 0. With a
// transactional id the transaction coordinator answers (txn.go).
//
// VAST: no idempotence or transactions (NoIdempotence hides this API).
func handleInitProducerID(b *Broker, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.InitProducerIDRequest)
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	if req.TransactionalID != nil {
		return initTransactionalProducer(b, r, req, resp)
	}
	resp.ProducerID = b.nextProducerID.Add(1)
	resp.ProducerEpoch = 0
	return resp
}

// codecName names a batch's compression codec, as compression.type does.
func codecName(c int8) string {
	switch c {
	case 1:
		return "gzip"
	case 2:
		return "snappy"
	case 3:
		return "lz4"
	case 4:
		return "zstd"
	}
	return "codec " + strconv.Itoa(int(c))
}

// producerDetail describes the producer id a batch carries.
func producerDetail(batch log.Batch) string {
	if batch.Transactional() {
		return "transactional batch (producer id " + strconv.FormatInt(batch.ProducerID(), 10) + ")"
	}
	return "idempotent batch (producer id " + strconv.FormatInt(batch.ProducerID(), 10) + ")"
}
