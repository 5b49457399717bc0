package control

// What the control plane lets one HTTP client hold: the body it may send,
// the time it may take to send a request or to take an answer, how long an
// idle connection stays, and how many connections are open at once. None
// of these copy a Kafka setting; they are vastfake's own guards, written
// down in docs/limits.md.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// MaxBodyBytes bounds the body of every request to the control plane. The
// largest body an endpoint reads is a fault, a few hundred bytes; a larger
// body gets 413 before any endpoint sees it.
const MaxBodyBytes = 1 << 20

// MaxConns is how many HTTP connections the binary's control plane holds
// open at once (see LimitListener).
const MaxConns = 64

// The binary's control plane server timeouts (see NewServer).
const (
	// ReadHeaderTimeout bounds reading a request's headers.
	ReadHeaderTimeout = 10 * time.Second
	// ReadTimeout bounds reading a whole request, headers and body (at
	// most MaxBodyBytes), so a client trickling a body is cut off.
	ReadTimeout = 30 * time.Second
	// WriteTimeout bounds writing an answer that is not streamed. Streamed
	// answers (records, requests and the other lists) move the deadline
	// on with every write instead, by writeStall, so a large download
	// that keeps moving finishes and one nobody reads is cut off.
	WriteTimeout = 30 * time.Second
	// IdleTimeout closes a keep-alive connection idle this long. The live
	// page polls every second, so its connection never idles out.
	IdleTimeout = 60 * time.Second
)

// NewServer returns an http.Server for h with the control plane's timeouts
// and errors logged to logger at Warn. Serve it on a LimitListener.
func NewServer(h http.Handler, logger *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       ReadTimeout,
		WriteTimeout:      WriteTimeout,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
}

// LimitListener returns ln holding at most n connections open at once:
// Accept waits while n are open, until one closes, so that HTTP clients
// (idle keep-alive connections, say) cannot take the file descriptors the
// Kafka listener needs. Connections beyond n wait in the kernel's accept
// queue, which costs the process no descriptor. Close ends a waiting
// Accept with net.ErrClosed.
func LimitListener(ln net.Listener, n int) net.Listener {
	return &limitListener{Listener: ln, slots: make(chan struct{}, n), done: make(chan struct{})}
}

type limitListener struct {
	net.Listener
	slots chan struct{}
	done  chan struct{}
	once  sync.Once
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &limitConn{Conn: c, slots: l.slots}, nil
}

func (l *limitListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// limitConn gives its slot back on its first Close.
type limitConn struct {
	net.Conn
	slots chan struct{}
	once  sync.Once
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { <-c.slots })
	return err
}

// limitBody reads the body of every request before next sees it, at most
// MaxBodyBytes (413 for more, whether declared by Content-Length or
// discovered while reading a chunked body), and hands next the body read.
// The request has then been read whole, so the read deadline the server
// set for it (ReadTimeout) is lifted: a long streamed answer is bounded by
// its write deadlines, not by how long the request took to arrive.
func limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > MaxBodyBytes {
			tooLarge(w)
			return
		}
		if r.Body != nil && r.Body != http.NoBody {
			body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
			if err != nil {
				if errors.As(err, new(*http.MaxBytesError)) {
					tooLarge(w)
				} else {
					writeError(w, http.StatusBadRequest, "reading the request body: "+err.Error())
				}
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		_ = http.NewResponseController(w).SetReadDeadline(time.Time{}) // not supported by an httptest.ResponseRecorder
		next.ServeHTTP(w, r)
	})
}

func tooLarge(w http.ResponseWriter) {
	w.Header().Set("Connection", "close")
	writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the request body is larger than %d bytes", MaxBodyBytes))
}
