//go:build heavy

package log

// The memory bounds of validation (docs/limits.md), measured as the bytes
// the process allocates: heavy, so test.sh runs them apart (go test -tags
// heavy), each alone.

import (
	"fmt"
	"math"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLongRecordsValidateInLittleMemory: validating a compressed batch
// holding one huge record allocates little, the same for a 1 MiB and a
// 32 MiB record, in every codec: keys, values and headers stream past the
// checks without being kept.
func TestLongRecordsValidateInLittleMemory(t *testing.T) {
	for _, size := range []int{1 << 20, 32 << 20} {
		records := headered(0, 0, size)
		for name, cc := range codecCases() {
			t.Run(fmt.Sprintf("%s %d MiB", name, size>>20), func(t *testing.T) {
				b, err := ParseBatch(withRecords(cc.codec, 1, cc.compress(t, records)))
				require.NoError(t, err)
				var stats RecordStats
				first := allocated(func() { stats, err = b.Validate() }) // fills the codec's pools
				require.NoError(t, err)
				assert.Equal(t, size, stats.MaxValue)
				// Pools may be empty on any run (the race detector drops
				// pooled items at random, a GC empties them), so a run may
				// allocate the codec's state again: the least of a few runs
				// is what validation itself costs.
				n := uint64(math.MaxUint64)
				for range 5 {
					n = min(n, allocated(func() { _, err = b.Validate() }))
					require.NoError(t, err)
				}
				t.Logf("%d-byte batch holding a %d-byte record: %d bytes allocated, %d the first time", len(b), size, n, first)
				// The first run fills two pools (the reader and its blocks) that a
				// GC may empty midway: allow twice the state, still half the record.
				assert.Less(t, first, uint64(16<<20), "bytes allocated to validate the batch")
				assert.Less(t, n, uint64(8<<20), "bytes allocated to validate it again")
			})
		}
	}
}

// allocated returns the bytes allocated while fn ran.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestValidateBombsAllocateLittle validates small batches that decompress
// to far more than they hold, or claim to, and checks that refusing them
// allocates a bounded amount: records are validated as they decompress,
// so memory follows the largest record, not the batch's (claimed) size.
func TestValidateBombsAllocateLittle(t *testing.T) {
	// One valid record, then zeros that read as a record of length 0,
	// under MaxDecompressedBytes in all.
	bomb := append(record(0, "v", nil), make([]byte, MaxDecompressedBytes-1<<10)...)
	cases := map[string][]byte{
		"gzip":             compressors[1](t, bomb),
		"lz4":              compressors[3](t, bomb),
		"zstd":             zstdStream(t, bomb, 1<<20),
		"zstd truncated":   compressors[4](t, bomb)[:64],
		"snappy truncated": compressors[2](t, bomb)[:64],
		"snappy":           compressors[2](t, bomb),
		"snappy xerial":    xerialSnappy(bomb),
	}
	codecs := map[string]int16{"gzip": 1, "lz4": 3, "zstd": 4, "zstd truncated": 4, "snappy truncated": 2, "snappy": 2, "snappy xerial": 2}
	for name, compressed := range cases {
		t.Run(name, func(t *testing.T) {
			codec := codecs[name]
			// Warm the codec's pools with a valid batch first.
			ok, err := ParseBatch(withRecords(codec, 1, compressors[codec](t, record(0, "v", nil))))
			require.NoError(t, err)
			_, err = ok.Validate()
			require.NoError(t, err)

			b, err := ParseBatch(withRecords(codec, 2, compressed))
			require.NoError(t, err)
			n := allocated(func() { _, err = b.Validate() })
			t.Logf("%d-byte batch: %d bytes allocated to refuse it (%v)", len(b), n, err)
			assert.Error(t, err)
			assert.Less(t, n, uint64(16<<20), "bytes allocated to refuse the batch")
		})
	}
}
