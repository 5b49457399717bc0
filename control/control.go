// Package control is vastfake's HTTP control plane: JSON endpoints that
// inspect a running broker (topics, records, groups with lag, the request
// log, rebalances) and drive it (faults, latency, dropped connections,
// failover, restart, the stale end offset, the manual clock, reset), and
// the live page at "/" that pictures its partitions, their owners and lag.
//
// New returns an http.Handler, so a test serves it with httptest and the
// binary with its -http listener. Every answer is JSON; an error is
// {"error": "..."} with a 4xx or 5xx status.
// A string a client chose (a transactional id, a group, member or client
// id, offset metadata, a record header's key) that is not UTF-8 shows as
// text with U+FFFD in place of its bad bytes and, beside it, as the field's
// name with "Base64" appended ("transactionalIdBase64"), as a record's key
// and value do.
//
// Every body is bounded by MaxBodyBytes and every list is streamed
// (server.go, stream.go); NewServer and LimitListener bound the server's
// time and connections.
//
// Every request passes a guard first (guard.go): a Host header naming
// neither localhost, an IP address nor a host given to WithAllowedHosts
// gets 403 (DNS rebinding); a POST, PUT or DELETE whose Origin or
// Sec-Fetch-Site says it comes from another site gets 403 (cross-site
// request forgery, as net/http.CrossOriginProtection decides); and with
// WithToken, a request without the token gets 401, except GET or HEAD
// /healthz.
//
//	GET    /healthz                                   {"status": "ok", "bootstrap": "host:port"}
//	GET    /rules                                     the rules.Rules in force
//	GET    /topics, /topics/{name}                    partitions with log start offset and high watermark
//	GET    /topics/{name}/partitions/{p}/records      ?offset=0&limit=100 (at most MaxRecordsLimit); Next-Offset header
//	GET    /groups, /groups/{name}                    state, generation, members with assignments, offsets with lag
//	GET    /rebalances                                ?group=name: finished rebalances, oldest first
//	GET    /audit                                     {"findings": [...]}: what audited rules found (broker.Finding)
//	DELETE /audit                                     forget the findings
//	GET    /requests                                  ?rule=MaxGroups&api=Produce&limit=N: the request log
//	DELETE /requests                                  empty the request log
//	POST   /faults                                    a broker.Fault as JSON; API and Err take names or numbers
//	DELETE /faults                                    clear faults and latency
//	POST   /latency                                   ?api=Fetch&d=200ms (d=0 removes it)
//	POST   /drop-connections, /failover, /restart, /reset
//	POST   /stale-end-offset                          ?d=30s (0 turns it off)
//	POST   /topics/{name}/compact                     compact a cleanup.policy=compact topic now; per partition what it did
//	POST   /topics/{name}/partitions/{p}/skip         ?n=5: the next batch starts n offsets past the end (a gap)
//	GET    /advertise                                 {"addresses": ["host:port", ...]}: what Metadata tells clients, per broker id
//	PUT    /advertise                                 {"addresses": [...]}: one per broker id, in order; 400 changes nothing
//	GET    /clock                                     {"now": ..., "manual": bool}
//	POST   /clock/advance                             ?d=30s; 409 on the wall clock
//	GET    /live.json                                 what the live page draws
//	GET    /                                          the live page
package control

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vastfake/vastfake/broker"
	"github.com/vastfake/vastfake/clock"
	"github.com/vastfake/vastfake/coordinator"
)

//go:embed page.html
var page []byte

// New returns the control plane of b, guarded as the package doc says and
// as opts configure. When b runs on a *clock.Manual, POST /clock/advance
// moves it; otherwise that endpoint answers 409. The handler keeps no state
// of its own and starts no goroutines. Every request's body is bounded by
// MaxBodyBytes (413 beyond), and every list is streamed.
func New(b *broker.Broker, opts ...Option) http.Handler {
	s := &server{b: b}
	s.manual, _ = b.Clock().(*clock.Manual)
	mux := http.NewServeMux()
	for _, rt := range s.routes() {
		mux.HandleFunc(rt.pattern, rt.handler)
	}
	return newGuard(limitBody(jsonErrors(mux)), opts)
}

// route is one endpoint: a net/http.ServeMux pattern and its handler.
type route struct {
	pattern string
	handler http.HandlerFunc
}

// routes lists every endpoint New serves; tests walk it.
func (s *server) routes() []route {
	b := s.b
	return []route{
		{"GET /{$}", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Header().Set("Cache-Control", "no-store")
			w.Write(page)
		}},
		{"GET /healthz", s.healthz},
		{"GET /rules", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, http.StatusOK, b.Rules()) }},
		{"GET /topics", s.topics},
		{"GET /topics/{name}", s.topic},
		{"GET /topics/{name}/partitions/{p}/records", s.records},
		{"GET /groups", s.groups},
		{"GET /groups/{name}", s.group},
		{"GET /rebalances", s.rebalances},
		{"GET /transactions", s.transactions},
		{"GET /transactions/{id}", s.transaction},
		{"GET /audit", s.audit},
		{"DELETE /audit", s.do(b.ResetFindings)},
		{"GET /requests", s.requests},
		{"DELETE /requests", s.do(b.ResetRequests)},
		{"POST /faults", s.injectFault},
		{"DELETE /faults", s.do(b.ClearFaults)},
		{"POST /latency", s.latency},
		{"POST /drop-connections", s.dropConnections},
		{"POST /failover", s.do(b.Failover)},
		{"POST /reset", s.do(b.Reset)},
		{"POST /restart", s.restart},
		{"GET /brokers", s.brokers},
		{"GET /advertise", s.advertised},
		{"PUT /advertise", s.setAdvertised},
		{"POST /brokers/{id}/down", s.brokerDownUp(b.BrokerDown)},
		{"POST /brokers/{id}/up", s.brokerDownUp(b.BrokerUp)},
		{"POST /brokers/{id}/failover", s.failOverAddress},
		{"POST /topics/{name}/partitions/{p}/leader", s.moveLeader},
		{"POST /groups/{name}/coordinator", s.moveCoordinator},
		{"POST /stale-end-offset", s.staleEndOffset},
		{"POST /topics/{name}/compact", s.compact},
		{"POST /topics/{name}/partitions/{p}/skip", s.skipOffsets},
		{"GET /clock", s.clock},
		{"POST /clock/advance", s.advance},
		{"GET /live.json", s.live},
	}
}

type server struct {
	b      *broker.Broker
	manual *clock.Manual
}

// ---- helpers ----

// writeJSON answers v as indented JSON with status. It encodes before
// writing anything, so a value JSON cannot encode gets a 500 that says why
// rather than a 200 with an empty or cut body.
func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		status = http.StatusInternalServerError
		buf.Reset()
		_ = enc.Encode(map[string]string{"error": "encoding the answer: " + err.Error()})
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

// do answers a POST or DELETE that runs f with {"status": "ok"}.
func (s *server) do(f func()) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		f()
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	}
}

// duration reads the query parameter d as a Go duration ("30s").
func duration(r *http.Request) (time.Duration, error) {
	v := r.URL.Query().Get("d")
	if v == "" {
		return 0, errors.New("query parameter d is required, a duration such as 30s")
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("d=%q: want a non-negative duration such as 30s", v)
	}
	return d, nil
}

// apiKey parses a Kafka API by name ("Produce", any case) or number.
func apiKey(v string) (kmsg.Key, error) {
	if n, err := strconv.ParseInt(v, 10, 16); err == nil && n >= 0 && kmsg.NameForKey(int16(n)) != "" {
		return kmsg.Key(n), nil
	}
	for k := int16(0); k <= kmsg.MaxKey; k++ {
		if name := kmsg.NameForKey(k); name != "" && strings.EqualFold(name, v) {
			return kmsg.Key(k), nil
		}
	}
	return 0, fmt.Errorf("unknown Kafka API %q", v)
}

// errCode parses a Kafka error by name ("NOT_LEADER_FOR_PARTITION", any
// case) or code.
func errCode(v string) (int16, error) {
	if n, err := strconv.ParseInt(v, 10, 16); err == nil {
		return int16(n), nil // any int16: a test may inject a code Kafka has not named
	}
	for c := int16(-1); c < 200; c++ {
		var ke *kerr.Error
		if errors.As(kerr.ErrorForCode(c), &ke) && strings.EqualFold(ke.Message, v) {
			return c, nil
		}
	}
	return 0, fmt.Errorf("unknown Kafka error %q", v)
}

// errName names a Kafka error code, "" for 0, or gives the number of a
// code Kafka has not named.
func errName(code int16) string {
	switch e := kerr.TypedErrorForCode(code); {
	case e == nil:
		return ""
	case e == kerr.UnknownServerError && code != kerr.UnknownServerError.Code:
		return strconv.Itoa(int(code))
	default:
		return e.Message
	}
}

// jsonErrors rewrites the plain-text errors of http.ServeMux (404 for a
// path no pattern matches, 405 for a method a pattern does not serve) as
// JSON.
func jsonErrors(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(&errorWriter{ResponseWriter: w}, r)
	})
}

type errorWriter struct {
	http.ResponseWriter
	swallow bool
}

func (e *errorWriter) WriteHeader(code int) {
	if code >= 400 && strings.HasPrefix(e.Header().Get("Content-Type"), "text/plain") {
		e.swallow = true
		e.Header().Del("X-Content-Type-Options")
		writeError(e.ResponseWriter, code, http.StatusText(code))
		return
	}
	e.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the connection (streamed
// answers set write deadlines through it).
func (e *errorWriter) Unwrap() http.ResponseWriter { return e.ResponseWriter }

func (e *errorWriter) Write(p []byte) (int, error) {
	if e.swallow {
		return len(p), nil
	}
	return e.ResponseWriter.Write(p)
}

// ---- inspection ----

func (s *server) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok", "bootstrap": s.b.AdvertisedAddr(), "kafkaVersion": s.b.KafkaVersion().String()})
}

func (s *server) topics(w http.ResponseWriter, r *http.Request) {
	st := startStream(w)
	st.array(0, s.eachTopic)
	st.end()
}

// eachTopic adds every topic's view, copying one topic at a time.
func (s *server) eachTopic(add func(any) bool) {
	s.b.EachTopic(func(t broker.TopicInfo) bool { return add(newTopicView(t)) })
}

// eachGroup adds every group's view, copying one group at a time.
func (s *server) eachGroup(add func(any) bool) {
	s.b.EachGroup(func(g coordinator.GroupInfo) bool {
		return add(s.newGroupView(g, map[string]broker.TopicInfo{}))
	})
}

func (s *server) topic(w http.ResponseWriter, r *http.Request) {
	t, ok := s.b.Topic(r.PathValue("name"))
	if !ok {
		writeError(w, http.StatusNotFound, "no topic "+r.PathValue("name"))
		return
	}
	writeJSON(w, http.StatusOK, newTopicView(t))
}

// MaxRecordsLimit is the most records one GET of a partition's records
// answers; a larger limit gets 400. The answer's Next-Offset header gives
// the offset the next page starts at.
const MaxRecordsLimit = 10_000

// records streams a page of one partition's records: at most limit (100
// unless given, at most MaxRecordsLimit) from offset. It decides where the
// page ends before writing it, from batch headers, and sends that as the
// Next-Offset header unless the page reaches the high watermark; then it
// writes the records one at a time as it decodes them, so the answer costs
// one record's memory whatever the page's size.
func (s *server) records(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	t, ok := s.b.Topic(name)
	if !ok {
		writeError(w, http.StatusNotFound, "no topic "+name)
		return
	}
	p, err := strconv.Atoi(r.PathValue("p"))
	if err != nil || p < 0 || p >= len(t.Partitions) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("topic %s has no partition %s", name, r.PathValue("p")))
		return
	}
	q := r.URL.Query()
	offset, limit := int64(0), 100
	if v := q.Get("offset"); v != "" {
		if offset, err = strconv.ParseInt(v, 10, 64); err != nil || offset < 0 {
			writeError(w, http.StatusBadRequest, "offset must be a non-negative number")
			return
		}
	}
	if v := q.Get("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit <= 0 || limit > MaxRecordsLimit {
			writeError(w, http.StatusBadRequest, fmt.Sprintf(
				"limit must be a number from 1 to %d; page through more with the Next-Offset header", MaxRecordsLimit))
			return
		}
	}
	end, hwm, ok := s.b.RecordsPageEnd(name, int32(p), offset, limit)
	if !ok {
		writeError(w, http.StatusNotFound, "no topic "+name) // deleted meanwhile
		return
	}
	if end < hwm {
		w.Header().Set("Next-Offset", strconv.FormatInt(end, 10))
	}
	st := startStream(w)
	st.array(0, func(add func(any) bool) {
		s.b.EachRecord(name, int32(p), offset, func(rec broker.Record) bool {
			return rec.Offset < end && add(newRecordView(rec))
		})
	})
	st.end()
}

func (s *server) groups(w http.ResponseWriter, r *http.Request) {
	st := startStream(w)
	st.array(0, s.eachGroup)
	st.end()
}

func (s *server) group(w http.ResponseWriter, r *http.Request) {
	g, ok := s.b.Group(r.PathValue("name"))
	if !ok {
		writeError(w, http.StatusNotFound, "no group "+r.PathValue("name"))
		return
	}
	writeJSON(w, http.StatusOK, s.newGroupView(g, map[string]broker.TopicInfo{}))
}

// transactions lists every transactional id (at most
// coordinator.MaxTransactionalIDs), or with ?state=open only those with an
// open transaction.
func (s *server) transactions(w http.ResponseWriter, r *http.Request) {
	state := r.URL.Query().Get("state")
	if state != "" && state != "open" {
		writeError(w, http.StatusBadRequest, "state must be open, or absent for every transactional id")
		return
	}
	st := startStream(w)
	st.array(0, func(add func(any) bool) { s.eachTransaction(state == "open", add) })
	st.end()
}

// eachTransaction adds each transactional id's view, copying one at a time.
func (s *server) eachTransaction(openOnly bool, add func(any) bool) {
	s.b.EachTransaction(openOnly, func(t coordinator.TxnInfo) bool { return add(newTransactionView(t)) })
}

func (s *server) transaction(w http.ResponseWriter, r *http.Request) {
	t, ok := s.b.Transaction(r.PathValue("id"))
	if !ok {
		writeError(w, http.StatusNotFound, "no transactional id "+r.PathValue("id"))
		return
	}
	writeJSON(w, http.StatusOK, newTransactionView(t))
}

func (s *server) rebalances(w http.ResponseWriter, r *http.Request) {
	group := r.URL.Query().Get("group")
	st := startStream(w)
	st.array(0, func(add func(any) bool) { eachRebalance(s.b.Rebalances(), group, add) })
	st.end()
}

// requests streams the request log, oldest first: with ?limit=N the newest
// N matching records. It copies the log a page at a time.
func (s *server) requests(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var api *kmsg.Key
	if v := q.Get("api"); v != "" {
		k, err := apiKey(v)
		if err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
		api = &k
	}
	limit := 0
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			writeError(w, http.StatusBadRequest, "limit must be a positive number")
			return
		}
		limit = n
	}
	rule := q.Get("rule")
	var brokerID *int32
	if v := q.Get("broker"); v != "" {
		id, err := strconv.ParseInt(v, 10, 32)
		if err != nil {
			writeError(w, http.StatusBadRequest, "broker must be a broker id")
			return
		}
		brokerID = new(int32(id))
	}
	keep := func(rec *broker.RequestRecord) bool {
		return (rule == "" || slices.ContainsFunc(all(rec.Rule, rec.Rules), func(r string) bool { return strings.EqualFold(r, rule) })) &&
			(api == nil || rec.API == *api) && (brokerID == nil || rec.Broker == *brokerID)
	}
	st := startStream(w)
	st.array(0, func(add func(any) bool) {
		s.b.EachRequest(keep, limit, func(rec broker.RequestRecord) bool { return add(newRequestView(rec)) })
	})
	st.end()
}

func (s *server) live(w http.ResponseWriter, r *http.Request) {
	s.writeLive(startStream(w))
}

// audit streams the report as writeJSON would write b.AuditReport():
// the copy it walks shares the findings' strings, so an answer costs the
// finding headers (10,000 at most) and one encoded finding at a time.
func (s *server) audit(w http.ResponseWriter, r *http.Request) {
	rep := s.b.AuditReport()
	tail := newAuditView(broker.AuditReport{Refusals: rep.Refusals, Errors: rep.Errors, Groups: rep.Groups, Formations: rep.Formations})
	st := startStream(w)
	_ = st.raw("{\n  \"audited\": ") && st.value(rep.Audited, "  ") &&
		st.raw(",\n  \"enforced\": ") && st.value(rep.Enforced, "  ") &&
		st.raw(",\n  \"findings\": ") && st.array(1, func(add func(any) bool) {
		for i := range rep.Findings {
			if !add(findingView(rep.Findings[i])) {
				return
			}
		}
	}) && (rep.Dropped == 0 || st.raw(",\n  \"dropped\": ") && st.value(rep.Dropped, "  ")) &&
		st.raw(",\n  \"refusals\": ") && st.value(tail.Refusals, "  ") &&
		st.raw(",\n  \"errors\": ") && st.value(tail.Errors, "  ") &&
		(rep.ErrorsDropped == 0 || st.raw(",\n  \"errorsDropped\": ") && st.value(rep.ErrorsDropped, "  ")) &&
		st.raw(",\n  \"groups\": ") && st.value(tail.Groups, "  ") &&
		st.raw(",\n  \"formations\": ") && st.value(tail.Formations, "  ") && st.raw("\n}")
	st.end()
}

func (s *server) clock(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"now": s.b.Clock().Now(), "manual": s.manual != nil})
}

// ---- control ----

// faultBody is broker.Fault as JSON, with the API and error by name or
// number. "partition" (one) or "partitions" (a list) narrow a topic's
// fault; neither, or a negative "partition", means every partition.
type faultBody struct {
	API        json.RawMessage `json:"api"`
	Err        json.RawMessage `json:"err"`
	Count      int             `json:"count"`
	Topic      string          `json:"topic"`
	Partition  *int32          `json:"partition"`
	Partitions []int32         `json:"partitions"`
	Group      string          `json:"group"`
	// Broker limits the fault to requests reaching that broker id.
	Broker *int32 `json:"broker"`
	// DropAnswer handles the request and closes the connection instead
	// of answering; Err is then not needed.
	DropAnswer bool `json:"dropAnswer"`
}

// rawString returns a JSON string's value or a number's text.
func rawString(m json.RawMessage) string {
	var s string
	if json.Unmarshal(m, &s) == nil {
		return s
	}
	return strings.TrimSpace(string(m))
}

func (s *server) injectFault(w http.ResponseWriter, r *http.Request) {
	var body faultBody
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		writeError(w, http.StatusBadRequest, "fault: "+err.Error())
		return
	}
	if len(body.API) == 0 || len(body.Err) == 0 && !body.DropAnswer {
		writeError(w, http.StatusBadRequest, `fault: "api" and "err" (or "dropAnswer": true) are required`)
		return
	}
	api, err := apiKey(rawString(body.API))
	if err != nil {
		writeError(w, http.StatusBadRequest, "fault: "+err.Error())
		return
	}
	if body.DropAnswer && len(body.Err) > 0 {
		writeError(w, http.StatusBadRequest, `fault: give "err" or "dropAnswer", not both: a dropped answer carries no error`)
		return
	}
	var code int16
	if len(body.Err) > 0 {
		if code, err = errCode(rawString(body.Err)); err != nil {
			writeError(w, http.StatusBadRequest, "fault: "+err.Error())
			return
		}
		if code == 0 {
			// The faulted part of the request is not handled, so success
			// would tell a producer that records it never stored were.
			writeError(w, http.StatusBadRequest, `fault: "err" 0 is success; name a Kafka error`)
			return
		}
	}
	if body.Count < 0 {
		writeError(w, http.StatusBadRequest, "fault: count must not be negative")
		return
	}
	if body.Partition != nil && body.Partitions != nil {
		writeError(w, http.StatusBadRequest, `fault: give "partition" or "partitions", not both`)
		return
	}
	f := broker.Fault{API: api, Err: code, DropAnswer: body.DropAnswer, Count: body.Count, Topic: body.Topic, Partitions: body.Partitions, Group: body.Group, Broker: body.Broker}
	if body.Partition != nil && *body.Partition >= 0 {
		f.Partitions = []int32{*body.Partition}
	}
	if f.Topic == "" {
		f.Partitions = nil
	}
	if err := s.b.InjectFault(f); err != nil {
		status := http.StatusConflict
		switch {
		case errors.Is(err, broker.ErrUnknownBroker):
			status = http.StatusNotFound
		case errors.Is(err, broker.ErrNameTooLong):
			status = http.StatusBadRequest
		}
		writeError(w, status, "fault: "+err.Error())
		return
	}
	out := map[string]any{
		"api": kmsg.NameForKey(int16(api)), "err": errName(code), "count": f.Count,
		"partitions": f.Partitions, "dropAnswer": f.DropAnswer,
	}
	putText(out, "topic", f.Topic)
	putText(out, "group", f.Group)
	if f.Broker != nil {
		out["broker"] = *f.Broker
	}
	writeJSON(w, http.StatusCreated, out)
}

func (s *server) latency(w http.ResponseWriter, r *http.Request) {
	api, err := apiKey(r.URL.Query().Get("api"))
	if err != nil {
		writeError(w, http.StatusBadRequest, "latency: "+err.Error())
		return
	}
	d, err := duration(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, "latency: "+err.Error())
		return
	}
	if v := r.URL.Query().Get("broker"); v != "" {
		id, err := strconv.ParseInt(v, 10, 32)
		if err != nil {
			writeError(w, http.StatusBadRequest, "latency: broker must be a broker id")
			return
		}
		if err := s.b.SetBrokerLatency(int32(id), api, d); err != nil {
			writeError(w, http.StatusNotFound, "latency: "+err.Error())
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"api": kmsg.NameForKey(int16(api)), "latency": d.String(), "broker": id})
		return
	}
	s.b.SetLatency(api, d)
	writeJSON(w, http.StatusOK, map[string]string{"api": kmsg.NameForKey(int16(api)), "latency": d.String()})
}

func (s *server) restart(w http.ResponseWriter, r *http.Request) {
	if err := s.b.Restart(); err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// brokerView is one broker id in GET /brokers: the address it is bound to
// (the host it was asked to listen on and the port it got) and the one
// Metadata hands to clients, named as the binary's log names them.
type brokerView struct {
	ID         int32  `json:"id"`
	Addr       string `json:"addr"`
	Advertised string `json:"advertised"`
	Down       bool   `json:"down"`
}

// brokers lists the broker ids, their bound and advertised addresses and
// which are down.
func (s *server) brokers(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"brokers": s.brokerViews()})
}

func (s *server) brokerViews() []brokerView {
	out := []brokerView{}
	advertised := s.b.Advertised()
	for i, id := range s.b.BrokerIDs() {
		out = append(out, brokerView{ID: id, Addr: s.b.BrokerAddr(id), Advertised: advertised[i], Down: s.b.BrokerIsDown(id)})
	}
	return out
}

// advertiseBody is GET /advertise's answer and PUT /advertise's body.
type advertiseBody struct {
	Addresses []string `json:"addresses"`
}

// advertised answers the host:port each broker id hands to clients.
func (s *server) advertised(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, advertiseBody{Addresses: s.b.Advertised()})
}

// setAdvertised runs Broker.SetAdvertised with the body's addresses, for a
// broker in a container whose mapped ports are known only once it runs:
// 400, changing nothing, for a body that is not {"addresses": [...]} with
// one host:port per broker id.
func (s *server) setAdvertised(w http.ResponseWriter, r *http.Request) {
	var body advertiseBody
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		writeError(w, http.StatusBadRequest, `advertise: want {"addresses": ["host:port", ...]}: `+err.Error())
		return
	}
	if err := s.b.SetAdvertised(body.Addresses...); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, advertiseBody{Addresses: s.b.Advertised()})
}

// brokerDownUp runs BrokerDown or BrokerUp on the {id} of the path: 400 for
// an id that is not a number, 404 for one the broker does not have, 409
// when it is already down (or up).
func (s *server) brokerDownUp(f func(int32) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, ok := pathBrokerID(w, r)
		if ok && brokerCallOK(w, f(id)) {
			writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "broker": id, "down": s.b.BrokerIsDown(id)})
		}
	}
}

// failOverAddress runs Broker.FailOverAddress: ?blackout= (a duration,
// default 0); 400 for a bad id or duration, 404 for no such broker, 409 when
// it is down.
func (s *server) failOverAddress(w http.ResponseWriter, r *http.Request) {
	id, ok := pathBrokerID(w, r)
	if !ok {
		return
	}
	var blackout time.Duration
	if v := r.URL.Query().Get("blackout"); v != "" {
		var err error
		if blackout, err = time.ParseDuration(v); err != nil || blackout < 0 {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("blackout=%q: want a non-negative duration such as 5s", v))
			return
		}
	}
	if brokerCallOK(w, s.b.FailOverAddress(id, blackout)) {
		writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "broker": id, "blackout": blackout.String(), "down": s.b.BrokerIsDown(id)})
	}
}

// pathBrokerID reads the {id} of the path; on a bad one it answers 400 and
// returns false.
func pathBrokerID(w http.ResponseWriter, r *http.Request) (int32, bool) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 32)
	if err != nil {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("broker id %q: want a number", r.PathValue("id")))
		return 0, false
	}
	return int32(id), true
}

// brokerCallOK answers the error of a call on one broker id, if any: 404
// for an id the broker does not have, 503 once it is closed, 409 for any
// other (down already, up already); it returns whether err was nil.
func brokerCallOK(w http.ResponseWriter, err error) bool {
	switch {
	case err == nil:
		return true
	case errors.Is(err, broker.ErrUnknownBroker):
		writeError(w, http.StatusNotFound, err.Error())
	case errors.Is(err, broker.ErrClosed):
		writeError(w, http.StatusServiceUnavailable, err.Error())
	default:
		writeError(w, http.StatusConflict, err.Error())
	}
	return false
}

// dropConnections closes every client connection, or with ?broker= those
// of one broker id (404 for no such broker).
func (s *server) dropConnections(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("broker") == "" {
		s.b.DropConnections()
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
		return
	}
	id, err := brokerParam(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if err := s.b.DropBrokerConnections(id); err != nil {
		writeError(w, http.StatusNotFound, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "broker": id})
}

// brokerParam reads the query parameter broker, a broker id.
func brokerParam(r *http.Request) (int32, error) {
	id, err := strconv.ParseInt(r.URL.Query().Get("broker"), 10, 32)
	if err != nil {
		return 0, fmt.Errorf("query parameter broker is required: a broker id, got %q", r.URL.Query().Get("broker"))
	}
	return int32(id), nil
}

// moveLeader moves a partition's leader (Broker.MoveLeader): 400 without a
// broker id, 404 for no such partition or broker. ?broker=preferred runs a
// preferred election instead (Broker.ElectPreferredLeader): 200 with
// "elected" false when the preferred replica leads already, 409 when it
// cannot lead (fenced, or not in sync).
func (s *server) moveLeader(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	p, err := strconv.ParseInt(r.PathValue("p"), 10, 32)
	if err != nil {
		writeError(w, http.StatusNotFound, fmt.Sprintf("topic %s has no partition %s", name, r.PathValue("p")))
		return
	}
	if r.URL.Query().Get("broker") == "preferred" {
		err := s.b.ElectPreferredLeader(name, int32(p))
		switch {
		case errors.Is(err, broker.ErrUnknownPartition):
			writeError(w, http.StatusNotFound, err.Error())
			return
		case errors.Is(err, broker.ErrPreferredLeaderNotAvailable):
			writeError(w, http.StatusConflict, err.Error())
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"topic": name, "partition": p, "leader": s.b.LeaderOf(name, int32(p)),
			"leaderEpoch": s.b.LeaderEpochOf(name, int32(p)), "elected": err == nil})
		return
	}
	id, err := brokerParam(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if err := s.b.MoveLeader(name, int32(p), id); err != nil {
		writeError(w, http.StatusNotFound, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"topic": name, "partition": p, "leader": id, "leaderEpoch": s.b.LeaderEpochOf(name, int32(p))})
}

// moveCoordinator moves a group's coordinator (Broker.MoveCoordinator):
// 400 without a broker id or for a name over Kafka's group id bound, 404
// for no such broker, 409 past the bound on moved coordinators.
func (s *server) moveCoordinator(w http.ResponseWriter, r *http.Request) {
	id, err := brokerParam(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if err := s.b.MoveCoordinator(r.PathValue("name"), id); err != nil {
		status := http.StatusNotFound
		switch {
		case errors.Is(err, broker.ErrNameTooLong):
			status = http.StatusBadRequest
		case errors.Is(err, broker.ErrTooManyMoves):
			status = http.StatusConflict
		}
		writeError(w, status, err.Error())
		return
	}
	out := map[string]any{"coordinator": id}
	putText(out, "group", r.PathValue("name"))
	writeJSON(w, http.StatusOK, out)
}

func (s *server) staleEndOffset(w http.ResponseWriter, r *http.Request) {
	d, err := duration(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, "stale end offset: "+err.Error())
		return
	}
	s.b.SetStaleEndOffset(d)
	writeJSON(w, http.StatusOK, map[string]string{"staleEndOffset": d.String()})
}

func (s *server) advance(w http.ResponseWriter, r *http.Request) {
	if s.manual == nil {
		writeError(w, http.StatusConflict, "the broker runs on the wall clock; start it with -manual-clock to move time")
		return
	}
	d, err := duration(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, "clock: "+err.Error())
		return
	}
	s.manual.Advance(d)
	writeJSON(w, http.StatusOK, map[string]any{"now": s.manual.Now(), "manual": true})
}

// compactionView is what compacting one partition did.
type compactionView struct {
	Partition         int32 `json:"partition"`
	Compacted         bool  `json:"compacted"`
	CleanedTo         int64 `json:"cleanedTo"`
	RecordsRemoved    int64 `json:"recordsRemoved"`
	TombstonesRemoved int64 `json:"tombstonesRemoved"`
	AbortedRemoved    int64 `json:"abortedRemoved"`
	MarkersRemoved    int64 `json:"markersRemoved"`
	BytesBefore       int64 `json:"bytesBefore"`
	BytesAfter        int64 `json:"bytesAfter"`
}

func (s *server) compact(w http.ResponseWriter, r *http.Request) {
	res, err := s.b.Compact(r.PathValue("name"))
	switch {
	case errors.Is(err, broker.ErrUnknownPartition):
		writeError(w, http.StatusNotFound, err.Error())
		return
	case errors.Is(err, broker.ErrNotCompacted):
		writeError(w, http.StatusConflict, err.Error())
		return
	case err != nil:
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	out := []compactionView{}
	for _, p := range res {
		out = append(out, compactionView{Partition: p.Partition, Compacted: p.Compacted, CleanedTo: p.CleanedTo,
			RecordsRemoved: p.RecordsRemoved, TombstonesRemoved: p.TombstonesRemoved,
			AbortedRemoved: p.AbortedRemoved, MarkersRemoved: p.MarkersRemoved, BytesBefore: p.BytesBefore, BytesAfter: p.BytesAfter})
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *server) skipOffsets(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	p, err := strconv.ParseInt(r.PathValue("p"), 10, 32)
	if err != nil {
		writeError(w, http.StatusNotFound, fmt.Sprintf("topic %s has no partition %s", name, r.PathValue("p")))
		return
	}
	n, err := strconv.ParseInt(r.URL.Query().Get("n"), 10, 64)
	if err != nil {
		writeError(w, http.StatusBadRequest, "query parameter n is required: how many offsets to skip, at least 1")
		return
	}
	switch err := s.b.SkipOffsets(name, int32(p), n); {
	case errors.Is(err, broker.ErrUnknownPartition):
		writeError(w, http.StatusNotFound, err.Error())
	case err != nil:
		writeError(w, http.StatusBadRequest, err.Error())
	default:
		writeJSON(w, http.StatusOK, map[string]any{"topic": name, "partition": p, "skip": n})
	}
}
