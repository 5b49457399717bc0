//go:build heavy

package broker

// The resident memory of 16,000 idle connections (Linux, heavy: it opens
// 16,000 connections from a child process).

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// connectionsPerBroker and connectionBrokers are the shape of
// TestMemoryOf16000Connections: as many connections as 16 brokers with
// 1,000 clients each.
const (
	connectionsPerBroker = 1000
	connectionBrokers    = 16
)

// TestMemoryOf16000Connections: 16 brokers with 1,000 open connections
// each, every one of which sent an ApiVersions and a Metadata request and
// then idles, keep the process under 256 MiB more than before they
// connected (peak resident memory, sampled while they connect, without
// collections of the test's). The clients live in a child process (the
// test binary itself, TestHelperHoldsConnections), so that this process
// needs only the broker's 16,000 descriptors; the test raises its soft
// RLIMIT_NOFILE to the hard one and skips, saying why, when that is too
// low.
func TestMemoryOf16000Connections(t *testing.T) {
	if raceDetector {
		t.Skip("memory is measured without the race detector (test.sh runs TestMemory tests again without it)")
	}
	if testing.Short() {
		t.Skip("opens 16,000 connections")
	}
	const n = connectionBrokers * connectionsPerBroker
	need := uint64(n + 1024)
	var lim syscall.Rlimit
	require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim))
	if lim.Max < need {
		t.Skipf("RLIMIT_NOFILE's hard limit is %d; %d connections need %d descriptors (raise it: ulimit -Hn)", lim.Max, n, need)
	}
	if lim.Cur < need {
		old := lim
		lim.Cur = lim.Max
		require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim))
		defer syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old)
	}
	b, err := New(WithBrokers(connectionBrokers))
	require.NoError(t, err)
	defer b.Close()
	addrs := make([]string, connectionBrokers)
	for i := range addrs {
		addrs[i] = b.BrokerAddr(int32(i))
	}
	runtime.GC()
	debug.FreeOSMemory()
	base := residentBytes(t)

	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperHoldsConnections$", "-test.v")
	cmd.Env = append(os.Environ(), "VASTFAKE_HOLD_CONNECTIONS="+strings.Join(addrs, ",")+";"+strconv.Itoa(connectionsPerBroker))
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	defer func() {
		stdin.Close()
		cmd.Wait()
	}()

	var peak atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			if r := residentBytes(t); r > peak.Load() {
				peak.Store(r)
			}
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	ready := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if sc.Text() == "holding" {
				ready <- nil
				io.Copy(io.Discard, stdout)
				return
			}
			t.Log("child: " + sc.Text())
		}
		ready <- fmt.Errorf("the child exited before holding its connections: %v", sc.Err())
	}()
	select {
	case err := <-ready:
		require.NoError(t, err)
	case <-time.After(5 * time.Minute):
		t.Fatal("the child did not open its connections within 5 minutes")
	}
	b.connsMu.Lock()
	open := len(b.conns)
	b.connsMu.Unlock()
	require.Equal(t, n, open)
	close(stop)
	<-sampled
	now := residentBytes(t)
	grew := peak.Load() - base
	t.Logf("%d idle connections (%d brokers × %d): resident +%d MiB at peak, +%d MiB now, %d B a connection at peak",
		n, connectionBrokers, connectionsPerBroker, grew>>20, (now-base)>>20, grew/n)
	assert.Less(t, grew, int64(256<<20), "16,000 connections stay under 256 MiB")
}

// TestHelperHoldsConnections is the client side of
// TestMemoryOf16000Connections, run in a child process: it opens the
// connections, sends ApiVersions and Metadata on each and reads the
// answers, prints "holding", and keeps them until its stdin closes.
func TestHelperHoldsConnections(t *testing.T) {
	spec := os.Getenv("VASTFAKE_HOLD_CONNECTIONS")
	if spec == "" {
		t.Skip("the child process of TestMemoryOf16000Connections")
	}
	addrList, per, _ := strings.Cut(spec, ";")
	each, err := strconv.Atoi(per)
	require.NoError(t, err)
	addrs := strings.Split(addrList, ",")
	var lim syscall.Rlimit
	require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim))
	lim.Cur = lim.Max
	require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim))
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("idle-client"))
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(12)
	// AppendRequest writes its frame's length at the start of the slice it
	// is given: each frame is encoded on its own.
	frames := append(f.AppendRequest(nil, kmsg.NewPtrApiVersionsRequest(), 1), f.AppendRequest(nil, md, 2)...)
	conns := make([]net.Conn, 0, len(addrs)*each)
	for _, addr := range addrs {
		for range each {
			nc, err := net.Dial("tcp", addr)
			require.NoError(t, err)
			conns = append(conns, nc)
			require.NoError(t, nc.SetDeadline(time.Now().Add(time.Minute)))
			_, err = nc.Write(frames)
			require.NoError(t, err)
			require.NoError(t, readAnswer(nc))
			require.NoError(t, readAnswer(nc))
		}
	}
	fmt.Println("holding")
	io.Copy(io.Discard, os.Stdin)
	for _, nc := range conns {
		nc.Close()
	}
}
