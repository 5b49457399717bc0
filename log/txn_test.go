package log

import (
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// txnData is a transactional batch of producer pid with values.
func txnData(tb testing.TB, pid int64, values ...string) []byte {
	raw := batch(tb, same(len(values), t0.UnixMilli()), values...)
	binary.BigEndian.PutUint16(raw[offAttributes:], transactionalBit)
	binary.BigEndian.PutUint64(raw[offProducerID:], uint64(pid))
	binary.BigEndian.PutUint16(raw[offProducerEpoch:], 0)
	binary.BigEndian.PutUint32(raw[offBaseSequence:], 0)
	binary.BigEndian.PutUint32(raw[offCRC:], crc32.Checksum(raw[offAttributes:], crc32c))
	return raw
}

// TestTransactionsInAPartition: two producers' transactions interleave;
// the last stable offset is the first offset of the earliest open one,
// a read_committed read stops there and lists the aborted transactions
// whose data it returns, and markers are control batches that read back as
// markers of the right kind.
func TestTransactionsInAPartition(t *testing.T) {
	p := NewPartition()
	appendRaw(t, p, batch(t, same(1, t0.UnixMilli()), "plain"), AppendOptions{}) // 0
	appendRaw(t, p, txnData(t, 7, "a1", "a2"), AppendOptions{})                  // 1-2, producer 7
	appendRaw(t, p, txnData(t, 8, "b1"), AppendOptions{})                        // 3, producer 8
	assert.Equal(t, int64(1), p.LastStableOffset())
	assert.Equal(t, []OpenTxn{{7, 1}, {8, 3}}, p.OpenTransactions())

	res, err := p.ReadCommitted(0, 1<<20)
	require.NoError(t, err)
	assert.Equal(t, int64(1), res.LastStableOffset)
	n := 0
	EachBatch(res.Records, func(Batch) bool { n++; return true })
	assert.Equal(t, 1, n, "only the batch below the last stable offset")

	abort := p.AppendMarker(MarkerBatch(7, 0, false, 0, t0), 7, false, t0) // 4
	assert.Equal(t, int64(4), abort)
	assert.Equal(t, int64(3), p.LastStableOffset(), "producer 8's transaction is still open")
	commit := p.AppendMarker(MarkerBatch(8, 0, true, 0, t0), 8, true, t0) // 5
	assert.Equal(t, int64(5), commit)
	assert.Equal(t, p.HighWatermark(), p.LastStableOffset())
	assert.Empty(t, p.OpenTransactions())
	assert.Equal(t, []AbortedTxn{{ProducerID: 7, FirstOffset: 1, LastOffset: 4}}, p.AbortedTransactions())

	res, err = p.ReadCommitted(0, 1<<20)
	require.NoError(t, err)
	assert.Equal(t, []AbortedTxn{{7, 1, 4}}, res.Aborted)
	var kinds []string
	EachBatch(res.Records, func(b Batch) bool {
		switch marker, commit := b.MarkerType(); {
		case marker && commit:
			kinds = append(kinds, "commit")
		case marker:
			kinds = append(kinds, "abort")
		default:
			kinds = append(kinds, "data")
		}
		return true
	})
	assert.Equal(t, []string{"data", "data", "data", "abort", "commit"}, kinds)

	res, err = p.ReadCommitted(5, 1<<20)
	require.NoError(t, err)
	assert.Empty(t, res.Aborted, "no aborted data at or after offset 5")

	_, err = p.DeleteBefore(5)
	require.NoError(t, err)
	assert.Empty(t, p.AbortedTransactions(), "the aborted transaction left with its marker")
}

// TestMarkerBatchIsValid: a marker batch parses, carries its producer and
// epoch, no sequence, one control record, and a valid CRC.
func TestMarkerBatchIsValid(t *testing.T) {
	m := MarkerBatch(42, 3, true, 9, t0)
	b, err := ParseBatch(m)
	require.NoError(t, err)
	assert.True(t, b.Control())
	assert.True(t, b.Transactional())
	assert.Equal(t, int64(42), b.ProducerID())
	assert.Equal(t, int16(3), b.ProducerEpoch())
	assert.Equal(t, int32(-1), b.BaseSequence())
	assert.Equal(t, int32(1), b.NumRecords())
	marker, commit := b.MarkerType()
	assert.True(t, marker)
	assert.True(t, commit)
}
