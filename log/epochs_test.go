package log

import (
	"bytes"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBatchesCarryTheirLeaderEpoch: Publish writes the epoch of the leader
// appending a batch into its header and nothing else: the bytes from the
// attributes on, which the CRC covers, are the producer's.
func TestBatchesCarryTheirLeaderEpoch(t *testing.T) {
	t.Parallel()
	p := NewPartition()
	raw := batch(t, same(2, 100), "a", "b")
	appendRaw(t, p, raw, AppendOptions{})
	p.BeginLeaderEpoch(3)
	appendRaw(t, p, raw, AppendOptions{})
	res, err := p.Read(0, 1<<20)
	require.NoError(t, err)
	var epochs []int32
	EachBatch(res.Records, func(b Batch) bool {
		epochs = append(epochs, b.LeaderEpoch())
		assert.True(t, bytes.Equal(raw[offAttributes:], b[offAttributes:]), "stored as received")
		return true
	})
	assert.Equal(t, []int32{0, 3}, epochs)
	assert.Equal(t, int32(-1), Batch(raw).LeaderEpoch(), "the producer's copy is untouched")
}

// TestEndOffsetForEpochTable: Kafka's answers (LeaderEpochFileCache's
// endOffsetFor) for histories written by hand.
func TestEndOffsetForEpochTable(t *testing.T) {
	t.Parallel()
	type step struct {
		begin   int32 // a leader takes over with this epoch (0: none)
		records int   // then this many one-record batches
	}
	type query struct {
		epoch     int32
		wantEpoch int32
		wantEnd   int64
	}
	for name, tc := range map[string]struct {
		steps     []step
		deleteTo  int64
		queries   []query
		forOffset map[int64]int32
	}{
		"no election": {
			steps:     []step{{0, 5}},
			queries:   []query{{0, 0, 5}, {1, -1, -1}, {-1, -1, -1}},
			forOffset: map[int64]int32{0: 0, 4: 0},
		},
		"three elections": {
			steps:     []step{{0, 3}, {1, 2}, {2, 0}, {4, 4}},
			queries:   []query{{0, 0, 3}, {1, 1, 5}, {2, 1, 5}, {3, 1, 5}, {4, 4, 9}, {5, -1, -1}},
			forOffset: map[int64]int32{0: 0, 2: 0, 3: 1, 4: 1, 5: 4, 8: 4},
		},
		"an election before any record": {
			steps:   []step{{1, 0}, {2, 3}},
			queries: []query{{0, 0, 0}, {1, 1, 0}, {2, 2, 3}},
		},
		"elections without records in between": {
			steps:   []step{{0, 2}, {1, 0}, {2, 0}, {3, 0}, {7, 1}},
			queries: []query{{0, 0, 2}, {1, 0, 2}, {6, 0, 2}, {7, 7, 3}, {8, -1, -1}},
		},
		"history truncated from the start": {
			steps:     []step{{0, 10}, {2, 10}, {5, 10}},
			deleteTo:  15,
			queries:   []query{{0, 0, 15}, {1, 1, 15}, {2, 2, 20}, {3, 2, 20}, {5, 5, 30}},
			forOffset: map[int64]int32{14: -1, 15: 2, 19: 2, 20: 5},
		},
		"log start at an epoch's start": {
			steps:    []step{{0, 10}, {2, 10}},
			deleteTo: 10,
			queries:  []query{{0, 0, 10}, {1, 1, 10}, {2, 2, 20}},
		},
	} {
		t.Run(name, func(t *testing.T) {
			p := NewPartition()
			for _, s := range tc.steps {
				if s.begin > 0 {
					p.BeginLeaderEpoch(s.begin)
				}
				for range s.records {
					appendRaw(t, p, batch(t, same(1, 100), "v"), AppendOptions{})
				}
			}
			if tc.deleteTo > 0 {
				_, err := p.DeleteBefore(tc.deleteTo)
				require.NoError(t, err)
			}
			for _, q := range tc.queries {
				epoch, end := p.EndOffsetForEpoch(q.epoch)
				assert.Equal(t, [2]int64{int64(q.wantEpoch), q.wantEnd}, [2]int64{int64(epoch), end}, "epoch %d", q.epoch)
			}
			for offset, want := range tc.forOffset {
				assert.Equal(t, want, p.EpochForOffset(offset), "offset %d", offset)
			}
		})
	}
}

// TestEndOffsetForEpochAgainstAModel drives random truncation-free
// histories (appends, elections that skip epochs, offset gaps, the log
// start moving) and checks every answer against a model that knows only
// what happened: which epochs began at which high watermark, and which
// batches each wrote.
func TestEndOffsetForEpochAgainstAModel(t *testing.T) {
	t.Parallel()
	type begun struct {
		epoch int32
		start int64 // the high watermark when it began
		wrote bool  // a batch was appended under it
	}
	for seed := int64(1); seed <= 200; seed++ {
		rng := rand.New(rand.NewSource(seed))
		p := NewPartition()
		history := []begun{{epoch: 0, start: 0}}
		var logStart int64
		for range 40 {
			switch op := rng.Intn(10); {
			case op < 6:
				n := 1 + rng.Intn(3)
				if rng.Intn(8) == 0 {
					require.NoError(t, p.SkipOffsets(int64(1+rng.Intn(4))))
				}
				vals := make([]string, n)
				for i := range vals {
					vals[i] = "v"
				}
				appendRaw(t, p, batch(t, same(n, 100), vals...), AppendOptions{})
				history[len(history)-1].wrote = true
			case op < 9:
				e := history[len(history)-1].epoch + 1 + int32(rng.Intn(3))
				p.BeginLeaderEpoch(e)
				history = append(history, begun{epoch: e, start: p.HighWatermark()})
			default:
				if hwm := p.HighWatermark(); hwm > logStart {
					logStart += rng.Int63n(hwm-logStart) + 1
					_, err := p.DeleteBefore(logStart)
					require.NoError(t, err)
				}
			}
		}
		latest := history[len(history)-1]
		// kept are the epochs Kafka's history still holds: those that
		// wrote a batch and the latest, without those wholly below the
		// log start but the last of them.
		var kept []begun
		for i, b := range history {
			if b.wrote || i == len(history)-1 {
				kept = append(kept, b)
			}
		}
		first := 0
		for i, b := range kept {
			if b.start <= logStart {
				first = i
			}
		}
		kept = kept[first:]
		for e := int32(-1); e <= latest.epoch+2; e++ {
			wantEpoch, wantEnd := int32(-1), int64(-1)
			switch {
			case e < 0 || e > latest.epoch:
			case e == latest.epoch:
				wantEpoch, wantEnd = e, p.HighWatermark()
			default:
				wantEpoch = e
				for _, b := range kept {
					if b.epoch <= e {
						wantEpoch = b.epoch
					}
				}
				for _, b := range history {
					if b.epoch > e {
						wantEnd = max(b.start, logStart)
						break
					}
				}
			}
			epoch, end := p.EndOffsetForEpoch(e)
			require.Equal(t, [2]int64{int64(wantEpoch), wantEnd}, [2]int64{int64(epoch), end}, "seed %d, epoch %d, history %v, log start %d", seed, e, history, logStart)
		}
		// What a consumer relies on: every batch still in the log ends at
		// or before the end offset of the epoch it carries, and is found
		// under that epoch.
		res, err := p.Read(logStart, 1<<30)
		require.NoError(t, err)
		EachBatch(res.Records, func(b Batch) bool {
			_, end := p.EndOffsetForEpoch(b.LeaderEpoch())
			assert.GreaterOrEqual(t, end, b.LastOffset()+1, "seed %d", seed)
			if b.BaseOffset() >= logStart {
				assert.Equal(t, b.LeaderEpoch(), p.EpochForOffset(b.BaseOffset()), "seed %d", seed)
			}
			return true
		})
	}
}
