package coordinator

import (
	"encoding/binary"
	"fmt"
	"testing"
	"time"
)

// FuzzSharePartition drives one share partition with arbitrary
// acquisitions, acknowledgement batches (any offsets, any types, any
// order), lock expiries, releases and log start moves, and checks after
// each step that its records are consistent: runs sorted, apart, inside
// the window, counted right, the start offset at the first record still in
// delivery, and an acknowledgement that is refused changing nothing.
func FuzzSharePartition(f *testing.F) {
	f.Add([]byte{0, 1, 20, 1, 0, 0, 0, 5, 1, 2, 1, 3, 3, 4})
	f.Add([]byte{0, 2, 50, 2, 1, 9, 0, 40, 0, 3, 1, 2, 0, 255, 255})
	f.Add([]byte{0, 1, 200, 3, 0, 0, 0, 0, 0, 0, 0, 0, 4, 4, 1, 1})
	f.Fuzz(func(t *testing.T, ops []byte) {
		lim := shareLimits{lock: 30 * time.Second, delivery: 3, locks: 64}
		now := time.Unix(1_700_000_000, 0)
		// The log: batches of 1 to 8 records, every fifth a control batch.
		var batches []ShareBatch
		off := int64(0)
		for i := range 64 {
			n := int64(1 + i%8)
			batches = append(batches, ShareBatch{First: off, Last: off + n - 1, Skip: i%5 == 4})
			off += n + int64(i%3) // gaps, as compaction leaves them
		}
		sp := &sharePartition{}
		members := []string{"a", "b", "c"}
		next := func() byte {
			if len(ops) == 0 {
				return 0
			}
			b := ops[0]
			ops = ops[1:]
			return b
		}
		for step := 0; len(ops) > 0 && step < 200; step++ {
			m := members[int(next())%len(members)]
			switch next() % 6 {
			case 0: // acquire
				from, ok := sp.firstAvailable(lim)
				if !ok {
					continue
				}
				var bs []ShareBatch
				for _, b := range batches {
					if b.Last >= from {
						bs = append(bs, b)
					}
				}
				sp.acquire(m, bs, 1+int(next()), now, lim)
			case 1, 2: // acknowledge arbitrary batches
				var acks []ackBatch
				for range 1 + int(next())%3 {
					var buf [2]byte
					buf[0], buf[1] = next(), next()
					first := int64(binary.BigEndian.Uint16(buf[:])) % (off + 10)
					last := first + int64(next()%16) - 2
					types := []int8{int8(next()%6) - 1}
					if next()%2 == 0 && last >= first && last-first < 16 {
						types = make([]int8, last-first+1)
						for i := range types {
							types[i] = int8(next() % 5)
						}
					}
					acks = append(acks, ackBatch{first, last, types})
				}
				before := fmt.Sprint(sp.runs, sp.start, sp.end, sp.records, sp.acquired)
				if code, _ := checkAckBatches(acks, next()%2 == 0); code != 0 {
					continue
				}
				if code, _, _ := sp.acknowledge(m, acks, now, lim); code != 0 {
					if after := fmt.Sprint(sp.runs, sp.start, sp.end, sp.records, sp.acquired); after != before {
						t.Fatalf("a refused acknowledgement changed the partition:\nbefore %s\nafter  %s", before, after)
					}
				}
			case 3: // time passes
				now = now.Add(time.Duration(next()) * time.Second)
				sp.expire(now, lim)
			case 4: // the member leaves
				sp.releaseOwned(m, lim)
			case 5: // retention
				sp.moveStart(sp.start + int64(next()%8))
			}
			checkSharePartition(t, sp, lim)
		}
	})
}

// checkSharePartition fails t unless sp's runs and counts are consistent.
func checkSharePartition(t *testing.T, sp *sharePartition, lim shareLimits) {
	t.Helper()
	if sp.start > sp.end {
		t.Fatalf("start %d past end %d", sp.start, sp.end)
	}
	var records, acquired int64
	for i, r := range sp.runs {
		switch {
		case r.first > r.last:
			t.Fatalf("run %d is inverted: %+v", i, r)
		case r.first < sp.start || r.last >= sp.end:
			t.Fatalf("run %d %+v outside [%d, %d)", i, r, sp.start, sp.end)
		case i > 0 && r.first <= sp.runs[i-1].last:
			t.Fatalf("runs %d and %d overlap or are out of order: %+v %+v", i-1, i, sp.runs[i-1], r)
		case r.state == recordAcquired && r.owner == "":
			t.Fatalf("run %d acquired by no one", i)
		case r.deliveries > lim.delivery:
			t.Fatalf("run %d delivered %d times, past the limit %d", i, r.deliveries, lim.delivery)
		}
		records += r.len()
		if r.state == recordAcquired {
			acquired += r.len()
		}
	}
	if len(sp.runs) > 0 && sp.runs[0].state.final() {
		t.Fatalf("the first run is done but the start offset did not pass it: %+v", sp.runs[0])
	}
	if len(sp.runs) > 0 && sp.start != sp.runs[0].first {
		t.Fatalf("start %d is not the first record in flight %d", sp.start, sp.runs[0].first)
	}
	if records != sp.records || acquired != sp.acquired {
		t.Fatalf("counted %d records, %d acquired; the partition says %d, %d", records, acquired, sp.records, sp.acquired)
	}
}
