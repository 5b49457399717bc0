package control_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vastfake/vastfake/control"
	"github.com/vastfake/vastfake/fixtures"
)

// concrete turns a route pattern into the method and a path that matches
// it, naming topic "orders", partition 0 and group "billing".
func concrete(pattern string) (method, path string) {
	method, path, _ = strings.Cut(pattern, " ")
	path = strings.NewReplacer("{$}", "", "{name}", "orders", "{p}", "0").Replace(path)
	return method, path
}

// hideLength hides a reader's length, so the client sends it chunked.
type hideLength struct{ io.Reader }

// TestEveryRouteRefusesAnOversizedBody walks every endpoint New serves (the
// route table itself, so a new endpoint is covered without new test code)
// and a path none serves, and sends each a body one byte over
// MaxBodyBytes: declared by Content-Length, and chunked with no length.
// Each answers 413 with a JSON error, and the broker is unchanged (the
// POST /reset among them did not run). A body of MaxBodyBytes passes.
func TestEveryRouteRefusesAnOversizedBody(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Topic("orders", 1))
	url := serve(t, k)
	big := bytes.Repeat([]byte("x"), control.MaxBodyBytes+1)
	routes := append(control.Routes(), "POST /no/such/endpoint")
	require.Greater(t, len(routes), 20)
	for _, pattern := range routes {
		method, path := concrete(pattern)
		for _, body := range []io.Reader{bytes.NewReader(big), hideLength{bytes.NewReader(big)}} {
			req, err := http.NewRequest(method, url+path, body)
			require.NoError(t, err)
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err, pattern)
			data, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.NoError(t, err)
			assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode, "%s (%T): %s", pattern, body, data)
			assert.Contains(t, string(data), `"error"`, pattern)
		}
	}
	_, ok := k.Broker().Topic("orders")
	require.True(t, ok, "POST /reset with an oversized body did not run")

	fault := fmt.Sprintf(`{"api": "Produce", "err": 6, "topic": %q}`, "")
	padded := fault + strings.Repeat(" ", control.MaxBodyBytes-len(fault))
	status, body, _ := send(t, "POST", url+"/faults", padded)
	assert.Equal(t, http.StatusCreated, status, "a body of exactly MaxBodyBytes is read: %s", body)
}

// recordsPage GETs one page of records and returns the offsets listed and
// the Next-Offset header ("" when absent).
func recordsPage(t *testing.T, url string) ([]int64, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var recs []struct {
		Offset     int64 `json:"offset"`
		Compressed bool  `json:"compressed"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&recs))
	var offsets []int64
	for _, r := range recs {
		offsets = append(offsets, r.Offset)
	}
	return offsets, resp.Header.Get("Next-Offset")
}

// TestRecordsPageWithNextOffset pages through a partition of 103 records
// in batches of 1 to 10, 7 records at a time, from offset 0 and from
// inside a batch, following Next-Offset: every offset comes exactly once,
// in order, and the last page (reaching the high watermark) has no
// Next-Offset. A page past the end is empty without one; DeleteRecords
// inside a batch moves the first page up to the new log start.
func TestRecordsPageWithNextOffset(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Topic("orders", 1))
	url := serve(t, k)
	n := 0
	for size := 1; n < 103; size = size%10 + 1 {
		var values []string
		for range min(size, 103-n) {
			values = append(values, strconv.Itoa(n))
			n++
		}
		k.Produce("orders", 0, values...)
	}
	for _, from := range []int64{0, 4} {
		var got []int64
		next := strconv.FormatInt(from, 10)
		pages := 0
		for next != "" {
			var offsets []int64
			offsets, next = recordsPage(t, url+"/topics/orders/partitions/0/records?limit=7&offset="+next)
			got = append(got, offsets...)
			pages++
			require.Less(t, pages, 100)
			if next != "" {
				assert.Len(t, offsets, 7, "every page but the last is full")
			}
		}
		var want []int64
		for o := from; o < 103; o++ {
			want = append(want, o)
		}
		assert.Equal(t, want, got, "from %d", from)
	}
	offsets, next := recordsPage(t, url+"/topics/orders/partitions/0/records?offset=103")
	assert.Empty(t, offsets)
	assert.Empty(t, next)
	offsets, next = recordsPage(t, url+"/topics/orders/partitions/0/records?offset=96&limit=7")
	assert.Len(t, offsets, 7)
	assert.Empty(t, next, "a page that ends at the high watermark has no Next-Offset")

	adm := kadm.NewClient(k.Client())
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	o := kadm.Offsets{}
	o.Add(kadm.Offset{Topic: "orders", Partition: 0, At: 12})
	_, err := adm.DeleteRecords(ctx, o)
	require.NoError(t, err)
	offsets, next = recordsPage(t, url+"/topics/orders/partitions/0/records?limit=3")
	assert.Equal(t, []int64{12, 13, 14}, offsets)
	assert.Equal(t, "15", next)
}

// TestRecordsPageCompressedBatches: in the kafka profile a compressed batch
// is one entry of the records endpoint, and pages step over whole batches.
func TestRecordsPageCompressedBatches(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Profile("kafka"), fixtures.Topic("orders", 1))
	url := serve(t, k)
	cl := k.Client(kgo.ProducerBatchCompression(kgo.GzipCompression()), kgo.DefaultProduceTopic("orders"))
	for batch := range 5 {
		var recs []*kgo.Record
		for i := range 4 {
			recs = append(recs, &kgo.Record{Value: []byte(fmt.Sprint(batch, i, strings.Repeat("x", 1000)))}) // compresses
		}
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		require.NoError(t, cl.ProduceSync(ctx, recs...).FirstErr())
		cancel()
	}
	// kgo may send the first records of a ProduceSync before the others
	// (on a loaded machine it does), so the batches are read from the
	// broker rather than assumed to be the five produced: bases holds each
	// batch's first offset, and one past the last.
	var bases []int64
	for _, r := range k.Broker().RecordsN("orders", 0, 0, 0) {
		require.True(t, r.Compressed)
		bases = append(bases, r.Offset)
	}
	bases = append(bases, 20)
	require.GreaterOrEqual(t, len(bases), 6, "five produces make five batches or more")
	next := func(i int) string { // the Next-Offset of a page ending before batch i
		if i >= len(bases)-1 {
			return ""
		}
		return fmt.Sprint(bases[i])
	}

	offsets, nextOffset := recordsPage(t, url+"/topics/orders/partitions/0/records?limit=2")
	assert.Equal(t, bases[:2], offsets)
	assert.Equal(t, next(2), nextOffset)
	// From inside a batch of more than one record, when there is one.
	for i := 0; i+1 < len(bases)-1; i++ {
		if bases[i+1]-bases[i] < 2 {
			continue
		}
		offsets, nextOffset = recordsPage(t, fmt.Sprintf("%s/topics/orders/partitions/0/records?limit=2&offset=%d", url, bases[i]+1))
		assert.Equal(t, bases[i:i+2], offsets, "the batch holding the offset is listed whole")
		assert.Equal(t, next(i+2), nextOffset)
		break
	}
	last := len(bases) - 2
	offsets, nextOffset = recordsPage(t, fmt.Sprintf("%s/topics/orders/partitions/0/records?limit=2&offset=%d", url, bases[last]))
	assert.Equal(t, bases[last:last+1], offsets)
	assert.Empty(t, nextOffset)
}

// TestRecordsLimitIsCapped: a limit up to MaxRecordsLimit is served, one
// above is refused with 400 naming the cap.
func TestRecordsLimitIsCapped(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Topic("orders", 1))
	url := serve(t, k)
	k.Produce("orders", 0, "a")
	var recs []map[string]any
	require.Equal(t, http.StatusOK, call(t, "GET", url+"/topics/orders/partitions/0/records?limit="+strconv.Itoa(control.MaxRecordsLimit), nil, &recs))
	assert.Len(t, recs, 1)
	var e errorBody
	require.Equal(t, http.StatusBadRequest, call(t, "GET", url+"/topics/orders/partitions/0/records?limit="+strconv.Itoa(control.MaxRecordsLimit+1), nil, &e))
	assert.Contains(t, e.Error, strconv.Itoa(control.MaxRecordsLimit))
	assert.Contains(t, e.Error, "Next-Offset")
}

// TestStalledReaderIsCutOff: a client that stops reading a streamed
// answer is cut off once it has taken nothing for the write stall, and
// the connection closes; nothing waits on it forever.
func TestStalledReaderIsCutOff(t *testing.T) {
	// Not parallel: SetWriteStall shortens every streamed answer's stall.
	defer control.SetWriteStall(200 * time.Millisecond)()
	k := fixtures.Start(t, fixtures.Topic("dump", 1))
	value := strings.Repeat("v", 64<<10)
	for range 4 {
		var recs []*kgo.Record
		for range 60 {
			recs = append(recs, &kgo.Record{Topic: "dump", Value: []byte(value)})
		}
		k.ProduceRecords(recs...)
	}
	closed := make(chan struct{})
	srv := httptest.NewUnstartedServer(control.New(k.Broker()))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateClosed {
			close(closed)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)

	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.(*net.TCPConn).SetReadBuffer(4<<10))
	_, err = fmt.Fprintf(conn, "GET /topics/dump/partitions/0/records?limit=10000 HTTP/1.1\r\nHost: localhost\r\n\r\n")
	require.NoError(t, err)
	select {
	case <-closed:
	case <-time.After(deadline):
		t.Fatal("the server still holds a connection whose client stopped reading")
	}
}

// TestConnectionCapLeavesKafkaServing holds every slot of a control plane
// capped at four connections with idle keep-alive connections: a fifth
// HTTP request waits, while a Kafka client still connects and produces;
// when one idle connection closes, the waiting request is answered.
func TestConnectionCapLeavesKafkaServing(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Topic("orders", 1))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := control.NewServer(control.New(k.Broker()), slog.New(slog.DiscardHandler))
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(control.LimitListener(ln, 4)) }()
	t.Cleanup(func() { srv.Close(); <-done })

	healthz := "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n"
	var idle []net.Conn
	for range 4 {
		c, err := net.Dial("tcp", ln.Addr().String())
		require.NoError(t, err)
		defer c.Close()
		_, err = io.WriteString(c, healthz)
		require.NoError(t, err)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		idle = append(idle, c) // answered, kept alive, idle
	}

	waiting, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err, "the kernel queues the connection")
	defer waiting.Close()
	_, err = io.WriteString(waiting, healthz)
	require.NoError(t, err)
	answered := make(chan int, 1)
	go func() {
		resp, err := http.ReadResponse(bufio.NewReader(waiting), nil)
		if err != nil {
			answered <- 0
			return
		}
		resp.Body.Close()
		answered <- resp.StatusCode
	}()

	k.Produce("orders", 0, "still-served") // a new kgo client: dials, produces, fails the test on error
	k.WaitRecords("orders", 0, "still-served")
	select {
	case <-answered:
		t.Fatal("a fifth connection was served while four were held")
	default:
	}
	idle[0].Close()
	select {
	case status := <-answered:
		assert.Equal(t, http.StatusOK, status)
	case <-time.After(deadline):
		t.Fatal("the waiting connection was not served after a slot freed")
	}
}

// serveWith serves control.New(k's broker) with control.NewServer, edited
// by edit, on a listener capped at control.MaxConns, until the test ends;
// it returns the address.
func serveWith(t *testing.T, k *fixtures.Kafka, edit func(*http.Server)) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := control.NewServer(control.New(k.Broker()), slog.New(slog.DiscardHandler))
	edit(srv)
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(control.LimitListener(ln, control.MaxConns)) }()
	t.Cleanup(func() { srv.Close(); <-done })
	return ln.Addr().String()
}

// TestServerBoundsHeadersAndTricklingBodies: NewServer sets every
// timeout, the idle one well above the live page's one-second poll;
// headers over 64 KiB get 431; a client that trickles a body is cut off
// at the read timeout (shortened here), its connection closed.
func TestServerBoundsHeadersAndTricklingBodies(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t)
	srv := control.NewServer(http.NotFoundHandler(), slog.New(slog.DiscardHandler))
	assert.Equal(t, control.ReadHeaderTimeout, srv.ReadHeaderTimeout)
	assert.Equal(t, control.ReadTimeout, srv.ReadTimeout)
	assert.Equal(t, control.WriteTimeout, srv.WriteTimeout)
	assert.Equal(t, control.IdleTimeout, srv.IdleTimeout)
	assert.Greater(t, control.IdleTimeout, 10*time.Second, "the live page's connection, polled every second, stays")

	addr := serveWith(t, k, func(s *http.Server) { s.ReadTimeout = 300 * time.Millisecond })
	big, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer big.Close()
	go func() { // the server stops reading at the limit; this write may fail
		_, _ = io.WriteString(big, "GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Big: "+strings.Repeat("h", 80<<10)+"\r\n\r\n")
	}()
	resp, err := http.ReadResponse(bufio.NewReader(big), nil)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusRequestHeaderFieldsTooLarge, resp.StatusCode)

	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	_, err = io.WriteString(c, "POST /faults HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100\r\n\r\n{")
	require.NoError(t, err)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(deadline)))
	rest, err := io.ReadAll(c) // the server answers what it can and closes
	require.NoError(t, err, "the server closed the trickling connection before the test's deadline")
	assert.NotContains(t, string(rest), "201 Created")
}

// TestStreamedAnswersOutliveWriteTimeout: a streamed answer moves its own
// write deadline on with every write, so a download longer than the
// server's WriteTimeout (here 1 ns, which no unstreamed answer survives)
// arrives whole.
func TestStreamedAnswersOutliveWriteTimeout(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Topic("dump", 1))
	// 20 values of 64 KiB: an answer of over a megabyte of JSON, written in
	// many writes, and a produce that a loaded machine's race detector
	// finishes well within the fixture's wait timeout.
	value := strings.Repeat("v", 64<<10)
	var recs []*kgo.Record
	for range 20 {
		recs = append(recs, &kgo.Record{Topic: "dump", Value: []byte(value)})
	}
	k.ProduceRecords(recs...)
	addr := serveWith(t, k, func(s *http.Server) { s.WriteTimeout = time.Nanosecond })

	offsets, next := recordsPage(t, "http://"+addr+"/topics/dump/partitions/0/records?limit=10000")
	assert.Len(t, offsets, 20)
	assert.Empty(t, next)
	var topics []map[string]any
	require.Equal(t, http.StatusOK, call(t, "GET", "http://"+addr+"/topics", nil, &topics))
	assert.Len(t, topics, 1)
	_, err := http.Get("http://" + addr + "/healthz")
	assert.Error(t, err, "an unstreamed answer is bound by WriteTimeout")
}
