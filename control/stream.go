package control

// Streamed answers: list endpoints write their JSON element by element as
// they read the broker, so that an answer costs the same memory whatever
// its length, and a client that stops reading holds one element, not the
// whole answer.

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// writeStall bounds how long a streamed answer waits for the client to take
// the next bytes; a client that takes nothing for this long is cut off
// (the connection closes mid-answer). It is a deadline per write rather
// than for the whole answer, so that a large download that keeps moving
// is never cut, however long it takes.
var writeStall = 30 * time.Second

// streamChunk is how many bytes a streamed answer gathers before it writes
// them to the client.
const streamChunk = 32 << 10

// jsonStream writes one JSON answer in pieces, formatted as writeJSON
// formats the whole (two-space indent), buffering at most streamChunk bytes
// and one element.
type jsonStream struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	buf bytes.Buffer
	enc *json.Encoder
	err error
}

// startStream answers 200 with a JSON body to be written through the
// returned stream. Headers must be set before.
func startStream(w http.ResponseWriter) *jsonStream {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	s := &jsonStream{w: w, rc: http.NewResponseController(w)}
	s.enc = json.NewEncoder(&s.buf)
	return s
}

// raw adds text as is. It returns false once the client is gone.
func (s *jsonStream) raw(text string) bool {
	if s.err != nil {
		return false
	}
	s.buf.WriteString(text)
	return s.flush(false)
}

// value adds v encoded as JSON, its lines after the first indented by
// prefix, as json.MarshalIndent(v, prefix, "  ") writes it. It returns false
// once the client is gone. A value JSON cannot encode ends the answer as
// broken (the handler aborts), since its status was already sent.
func (s *jsonStream) value(v any, prefix string) bool {
	if s.err != nil {
		return false
	}
	s.enc.SetIndent(prefix, "  ")
	if err := s.enc.Encode(v); err != nil {
		panic(http.ErrAbortHandler)
	}
	s.buf.Truncate(s.buf.Len() - 1) // Encode's newline
	return s.flush(false)
}

// array streams a JSON array: each calls add with every element until add
// returns false, and array writes the elements at nesting depth depth (0
// for an array that is the whole answer). It returns false once the
// client is gone.
func (s *jsonStream) array(depth int, each func(add func(v any) bool)) bool {
	outer := indent(depth)
	inner := outer + "  "
	if !s.raw("[") {
		return false
	}
	n := 0
	each(func(v any) bool {
		sep := ",\n" + inner
		if n == 0 {
			sep = "\n" + inner
		}
		n++
		return s.raw(sep) && s.value(v, inner)
	})
	if n == 0 {
		return s.raw("]")
	}
	return s.raw("\n" + outer + "]")
}

// end writes what is left and the final newline.
func (s *jsonStream) end() {
	s.buf.WriteString("\n")
	s.flush(true)
}

// flush writes the buffer when it holds streamChunk bytes or more, or
// always with force, first moving the write deadline writeStall ahead.
func (s *jsonStream) flush(force bool) bool {
	if s.err != nil {
		return false
	}
	if s.buf.Len() < streamChunk && !force {
		return true
	}
	_ = s.rc.SetWriteDeadline(time.Now().Add(writeStall)) // not supported by an httptest.ResponseRecorder
	_, s.err = s.w.Write(s.buf.Bytes())
	s.buf.Reset()
	return s.err == nil
}

func indent(depth int) string { return strings.Repeat("  ", depth) }
