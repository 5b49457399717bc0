//go:build heavy

package broker

import (
	"fmt"
	"io"
	"net"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/vastfake/vastfake/rules"
)

// Client-named strings, as a class: every API of the table at its newest
// version, every string of its request at any depth (through the first
// element of each array, as TestRepeatedNamesAreAnsweredOnce walks them).
// Each string in turn is made longer than any name the broker keeps
// (nameBoundLong), a different one in each of nameBoundRounds requests
// sent to a world that holds a topic, a group and committed offsets; the
// heap the broker keeps afterwards may grow by far less than one such
// string. A string the broker kept needs a bound (Kafka's where it has one:
// 32,767 bytes for group and transactional ids, 249 for topics, the group
// record's 1 MiB for what members send, 4 KiB of offset metadata), and a
// refusal with Kafka's error past it. The answer to each such request is
// bounded like the request: it may echo the string once, never more. Heavy
// (test.sh runs it with -tags heavy): some hundreds of requests of over a
// megabyte, each measured on the live heap after two collections.

const (
	nameBoundLong   = 1<<20 + 64<<10 // over a group's 1 MiB record, so no bound lets one through
	nameBoundRounds = 4
)

func TestEveryClientStringIsBounded(t *testing.T) {
	r := rules.Kafka()
	apis, _, _ := buildAPIs(&r, DefaultKafkaVersion)
	for _, a := range apis {
		probe := buildRepeatRequest(a.key, a.max, &repeatWorld{memberID: "m", generation: 1})
		if !probe.IsFlexible() {
			// A string of a version that is not flexible has a 16-bit
			// length: the wire bounds it at 32,767 bytes.
			t.Logf("%s v%d: not flexible, its strings are at most 32767 bytes", kmsg.NameForKey(a.key), a.max)
			continue
		}
		for _, p := range stringPaths(reflect.ValueOf(probe).Elem(), "") {
			name := fmt.Sprintf("%s/v%d/%s", kmsg.NameForKey(a.key), a.max, p)
			t.Run(name, func(t *testing.T) {
				kept, answer := sendLongStrings(t, a.key, a.max, p)
				t.Logf("heap kept after %d requests with a %d-byte string: %+d B; largest answer %d B", nameBoundRounds, nameBoundLong, kept, answer)
				require.Less(t, kept, int64(nameBoundLong),
					"the broker keeps %s: give it a bound and refuse longer ones with Kafka's error", p)
				require.Less(t, answer, 2*nameBoundLong,
					"the answer echoes %s more than once: answer it once, or clip it", p)
			})
		}
	}
}

// sendLongStrings sends nameBoundRounds requests for key at version, each
// with a different long string at path, after one to warm the connection's
// buffers, and returns how much the live heap grew and the largest answer.
func sendLongStrings(t *testing.T, key, version int16, path string) (kept int64, answer int) {
	w := newRepeatWorld(t, "kafka")
	nc, err := net.Dial("tcp", w.b.Addr())
	require.NoError(t, err)
	defer nc.Close()
	require.NoError(t, nc.SetDeadline(time.Now().Add(30*time.Second)))
	// A transactional id with an open transaction, so that the
	// transactional requests reach what they would keep.
	init := kmsg.NewPtrInitProducerIDRequest()
	init.SetVersion(5)
	init.TransactionalID, init.TransactionTimeoutMillis = kmsg.StringPtr(nameBoundTxn), 60_000
	ir := roundTrip(t, nc, init).(*kmsg.InitProducerIDResponse)
	require.Zero(t, ir.ErrorCode)
	send := func(round int) {
		req := buildRepeatRequest(key, version, w)
		fillTransactional(reflect.ValueOf(req).Elem(), ir.ProducerID, ir.ProducerEpoch)
		s := fmt.Sprintf("%c%07d", 'a'+round, round) + strings.Repeat("a", nameBoundLong-8)
		setStringAt(reflect.ValueOf(req).Elem(), path, s)
		frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("long")).AppendRequest(nil, req, int32(round))
		require.NoError(t, nc.SetDeadline(time.Now().Add(30*time.Second)))
		_, err := nc.Write(frame)
		require.NoError(t, err)
		n, err := readAnswerSize(nc)
		answer = max(answer, n)
		if err != nil {
			// The broker may close a connection it will not serve (a SASL
			// request without SASL); a new one serves the next round.
			nc.Close()
			nc, err = net.Dial("tcp", w.b.Addr())
			require.NoError(t, err)
		}
	}
	// settle has the connection answer a small request, so that the
	// buffers of the answer before it are back where they go.
	settle := func() {
		frame := kmsg.NewRequestFormatter().AppendRequest(nil, kmsg.NewPtrApiVersionsRequest(), 99)
		_, err := nc.Write(frame)
		require.NoError(t, err)
		require.NoError(t, readAnswer(nc))
	}
	send(0)
	settle()
	// The free list's buffers (bounded on their own, buffers.go) are not
	// what a name costs: answers echoing a long name pass through them.
	before := int64(liveHeap()) - int64(w.b.buffers.freeBytes())
	for round := 1; round <= nameBoundRounds; round++ {
		send(round)
	}
	settle()
	return int64(liveHeap()) - int64(w.b.buffers.freeBytes()) - before, answer
}

const nameBoundTxn = "txn"

// fillTransactional names the transactional id nameBoundTxn, its producer
// id and epoch and a valid transaction timeout wherever v has such fields.
func fillTransactional(v reflect.Value, pid int64, epoch int16) {
	for i := range v.NumField() {
		f := v.Field(i)
		switch name := v.Type().Field(i).Name; {
		case name == "TransactionalID" || name == "TransactionID":
			if f.Kind() == reflect.String {
				f.SetString(nameBoundTxn)
			} else {
				f.Set(reflect.ValueOf(kmsg.StringPtr(nameBoundTxn)))
			}
		case name == "ProducerID" && f.Kind() == reflect.Int64:
			f.SetInt(pid)
		case name == "ProducerEpoch" && f.Kind() == reflect.Int16:
			f.SetInt(int64(epoch))
		case name == "TransactionTimeoutMillis":
			f.SetInt(60_000)
		case f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.Struct:
			for j := range f.Len() {
				fillTransactional(f.Index(j), pid, epoch)
			}
		}
	}
}

// readAnswer reads one answer frame, or returns the error that ended the
// connection.
func readAnswer(nc net.Conn) error {
	_, err := readAnswerSize(nc)
	return err
}

// readAnswerSize reads one answer frame and returns its size, or the error
// that ended the connection.
func readAnswerSize(nc net.Conn) (int, error) {
	var size [4]byte
	if _, err := io.ReadFull(nc, size[:]); err != nil {
		return 0, err
	}
	n := int(size[0])<<24 | int(size[1])<<16 | int(size[2])<<8 | int(size[3])
	_, err := io.CopyN(io.Discard, nc, int64(n))
	return 4 + n, err
}

func liveHeap() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// stringPaths lists every string of v at any depth as dotted field paths
// through the first element of the arrays above it; "[]" ends the path of
// an array of strings (its first element).
func stringPaths(v reflect.Value, prefix string) []string {
	var out []string
	for i := range v.NumField() {
		f, name := v.Field(i), v.Type().Field(i).Name
		switch {
		case f.Kind() == reflect.String, f.Kind() == reflect.Pointer && f.Type().Elem().Kind() == reflect.String:
			out = append(out, prefix+name)
		case f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.String:
			out = append(out, prefix+name+"[]")
		case f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.Struct && f.Len() > 0:
			out = append(out, stringPaths(f.Index(0), prefix+name+".")...)
		}
	}
	return out
}

// setStringAt sets the string at path (see stringPaths) to s, making an
// array of strings hold one element if it held none.
func setStringAt(v reflect.Value, path, s string) {
	first, rest, nested := strings.Cut(path, ".")
	if nested {
		setStringAt(v.FieldByName(first).Index(0), rest, s)
		return
	}
	if name, ok := strings.CutSuffix(first, "[]"); ok {
		f := v.FieldByName(name)
		if f.Len() == 0 {
			f.Set(reflect.ValueOf([]string{s}))
		} else {
			f.Index(0).SetString(s)
		}
		return
	}
	f := v.FieldByName(first)
	if f.Kind() == reflect.Pointer {
		f.Set(reflect.ValueOf(&s))
		return
	}
	f.SetString(s)
}
