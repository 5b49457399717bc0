package log

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// traverse reads the whole log from its start as a consumer does, a read
// at a time from where the last one ended, and returns what the reads
// returned, one after the other, with the aborted transactions a
// read_committed reader was told of (each once, as a reader keeps them).
func traverse(tb testing.TB, p *Partition, committed bool, maxBytes int) ([]byte, []AbortedTxn) {
	tb.Helper()
	var out []byte
	var aborted []AbortedTxn
	for offset := p.LogStartOffset(); ; {
		read := p.Read
		if committed {
			read = p.ReadCommitted
		}
		res, err := read(offset, maxBytes)
		require.NoError(tb, err)
		if len(res.Records) == 0 {
			res.Release()
			return out, aborted
		}
		out = append(out, res.Records...)
		for _, a := range res.Aborted { // reads that stop elsewhere list a transaction again
			if !slices.Contains(aborted, a) {
				aborted = append(aborted, a)
			}
		}
		EachBatch(res.Records, func(b Batch) bool {
			require.Equal(tb, crc32.Checksum(b[offAttributes:], crc32c), binary.BigEndian.Uint32(b[offCRC:]), "the CRC of the batch at %d", b.BaseOffset())
			offset = b.LastOffset() + 1
			return true
		})
		res.Release()
	}
}

// TestUnencodedMarkersReadAsStored: a log that keeps transaction markers
// unencoded and one that stores every marker encoded, given the same
// appends (transactional data, commit and abort markers of several
// producers, epochs and coordinator epochs, markers in runs and after
// data, leaders taking the partition over with new epochs), retention,
// DeleteRecords and compaction, read back the same bytes, CRCs included,
// read_uncommitted and read_committed, at any read size, with the same
// aborted transactions, watermarks and size.
func TestUnencodedMarkersReadAsStored(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 1))
			unencoded, encoded := NewPartition(), NewPartition()
			encoded.encodeMarkers = true
			both := func(f func(p *Partition)) { f(unencoded); f(encoded) }
			now, kept := t0, 0
			for op := range 200 {
				now = now.Add(time.Duration(rng.IntN(2000)) * time.Millisecond)
				if rng.IntN(25) == 0 { // a new leader: later batches and markers carry its epoch
					epoch := unencoded.LeaderEpoch() + 1
					both(func(p *Partition) { p.BeginLeaderEpoch(epoch) })
				}
				k := rng.IntN(20)
				if seed%2 == 0 && k < 7 && rng.IntN(4) > 0 {
					k = 7 + rng.IntN(9) // mostly markers, as in the partitions of a wide transaction
				}
				switch {
				case k < 6:
					pid := int64(rng.IntN(4) + 1)
					raw := txnKeyed(t, pid, rec(fmt.Sprint("k", rng.IntN(5)), fmt.Sprint("v", op), now.UnixMilli()))
					both(func(p *Partition) { appendRaw(t, p, append([]byte(nil), raw...), AppendOptions{Now: now}) })
				case k < 7:
					raw := keyed(0, nil, t, rec(fmt.Sprint("k", rng.IntN(5)), fmt.Sprint("p", op), now.UnixMilli()))
					both(func(p *Partition) { appendRaw(t, p, append([]byte(nil), raw...), AppendOptions{Now: now}) })
				case k < 16:
					pid, commit := int64(rng.IntN(4)+1), rng.IntN(3) > 0
					marker := MarkerBatch(pid, int16(rng.IntN(3)), commit, int32(rng.IntN(2)*7), now)
					var bases [2]int64
					for i, p := range []*Partition{unencoded, encoded} {
						bases[i] = p.AppendMarker(marker, pid, commit, now)
					}
					require.Equal(t, bases[0], bases[1])
				case k < 17:
					to := unencoded.LogStartOffset() + int64(rng.IntN(3))
					if to <= unencoded.HighWatermark() {
						both(func(p *Partition) { _, err := p.DeleteBefore(to); require.NoError(t, err) })
					}
				case k < 18:
					retention := time.Duration(rng.IntN(60)) * time.Second
					both(func(p *Partition) { p.ApplyRetention(now, retention) })
				default:
					var res [2]CompactResult
					for i, p := range []*Partition{unencoded, encoded} {
						r, err := p.Compact(CompactOptions{Now: now, DeleteRetention: 10 * time.Second})
						require.NoError(t, err)
						r.BytesBefore, r.BytesAfter = 0, 0 // the unencoded log counts markers without their chunk
						res[i] = r
					}
					require.Equal(t, res[1], res[0], "op %d: compaction", op)
				}
				for _, committed := range []bool{false, true} {
					for _, maxBytes := range []int{1, 1 << 20} {
						want, wantAborted := traverse(t, encoded, committed, maxBytes)
						got, gotAborted := traverse(t, unencoded, committed, maxBytes)
						if string(want) != string(got) {
							t.Fatalf("op %d, read_committed %v, max bytes %d: the logs differ:\nencoded   %s\nunencoded %s", op, committed, maxBytes, describeLog(encoded), describeLog(unencoded))
						}
						require.ElementsMatch(t, wantAborted, gotAborted, "op %d", op)
					}
				}
				require.Equal(t, encoded.LastStableOffset(), unencoded.LastStableOffset())
				ls, hw := encoded.Watermarks()
				uls, uhw := unencoded.Watermarks()
				require.Equal(t, [2]int64{ls, hw}, [2]int64{uls, uhw})
				require.Equal(t, encoded.Bytes(), unencoded.Bytes(), "op %d: markers count their encoded size", op)
				ts, off := encoded.MaxTimestamp()
				uts, uoff := unencoded.MaxTimestamp()
				require.Equal(t, [2]int64{ts, off}, [2]int64{uts, uoff})
				unencoded.mu.RLock()
				for i := range unencoded.entries {
					if unencoded.entries[i].unencoded() {
						kept++
					}
				}
				unencoded.mu.RUnlock()
				probe := now.Add(-time.Duration(rng.IntN(30)) * time.Second).UnixMilli()
				o, s := encoded.OffsetForTime(probe)
				uo, us := unencoded.OffsetForTime(probe)
				require.Equal(t, [2]int64{o, s}, [2]int64{uo, us}, "op %d: offset for time", op)
			}
			assert.Positive(t, kept, "some markers were kept unencoded")
		})
	}
}

// TestMarkersAfterDataStayEncoded: a marker that follows a batch in its
// chunk is stored encoded, so a read returns the data and its marker in
// one run; markers in a partition with nothing else are kept unencoded and
// read in one run of their own.
func TestMarkersAfterDataStayEncoded(t *testing.T) {
	p := NewPartition()
	appendRaw(t, p, txnData(t, 1, "a"), AppendOptions{Now: t0})
	p.AppendMarker(MarkerBatch(1, 0, true, 0, t0), 1, true, t0)
	res, err := p.Read(0, 1<<20)
	require.NoError(t, err)
	n := 0
	EachBatch(res.Records, func(Batch) bool { n++; return true })
	res.Release()
	assert.Equal(t, 2, n, "the data and its marker in one read")

	q := NewPartition()
	for pid := range int64(3) {
		q.AppendMarker(MarkerBatch(pid, 0, true, 0, t0), pid, true, t0)
	}
	res, err = q.Read(0, 1<<20)
	require.NoError(t, err)
	assert.Len(t, res.Records, 3*markerSize, "three markers in one read")
	q.mu.RLock()
	for i := range q.entries {
		assert.True(t, q.entries[i].unencoded())
	}
	q.mu.RUnlock()
}

// TestUnencodedMarkersCarryTheLeaderEpoch: a marker kept unencoded is read
// with the leader epoch of the leader that appended it, as a stored batch
// is, across a leader change.
func TestUnencodedMarkersCarryTheLeaderEpoch(t *testing.T) {
	p := NewPartition()
	p.AppendMarker(MarkerBatch(1, 0, true, 0, t0), 1, true, t0)
	p.BeginLeaderEpoch(3)
	p.AppendMarker(MarkerBatch(2, 0, false, 0, t0), 2, false, t0)
	p.mu.RLock()
	for i := range p.entries {
		assert.True(t, p.entries[i].unencoded(), "entry %d", i)
	}
	p.mu.RUnlock()
	res, err := p.Read(0, 1<<20)
	require.NoError(t, err)
	defer res.Release()
	var epochs []int32
	EachBatch(res.Records, func(b Batch) bool { epochs = append(epochs, b.LeaderEpoch()); return true })
	assert.Equal(t, []int32{0, 3}, epochs)
}

// describeLog lists a log's batches, for a failure's message.
func describeLog(p *Partition) string {
	var sb strings.Builder
	p.Batches(0, func(b Batch) bool {
		marker, commit := b.MarkerType()
		fmt.Fprintf(&sb, "[%d-%d marker=%v commit=%v pid=%d epoch=%d ts=%d len=%d] ", b.BaseOffset(), b.LastOffset(), marker, commit,
			b.ProducerID(), b.ProducerEpoch(), b.MaxTimestamp(), len(b))
		return true
	})
	return sb.String()
}
