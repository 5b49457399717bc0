package coordinator

// KIP-848 subscriptions by regular expression (SubscribedTopicRegex).
//
// A regex is compiled once, outside the coordinator's lock, and shared by
// every member that subscribes with the same text, in any group; it is
// forgotten when the last of them leaves or changes its subscription. Its
// cost is bounded twice: by its bytes (MaxSubscribedTopicRegexBytes) and by
// the program it compiles to (MaxSubscribedTopicRegexInstructions), which
// is what matching and memory cost; a regex over either bound gets
// INVALID_REGULAR_EXPRESSION before the heartbeat takes the lock.
//
// Matching regexes against topics never happens under the lock either, as
// Kafka resolves regexes off the request path (its group coordinator hands
// them to an executor): a worker of the coordinator's own resolves a new
// regex against every topic and matches topics created since against
// every regex, then takes the lock to install what matched and start a new
// epoch in each group whose subscription it changed. A topic change or a
// heartbeat waits for no matching; what they see of a regex is its last
// resolution. The worker is one goroutine the coordinator starts in New and
// Close stops; tests in this package drive it by hand instead
// (Config.regexesByHand, resolveRegexes).

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"sort"
	"sync"
)

// MaxSubscribedTopicRegexInstructions bounds the program a
// SubscribedTopicRegex compiles to, in instructions of Go's regexp/syntax
// (one per literal character, class, or branch; a counted repetition
// repeats its body). Matching costs up to the program's size per byte of a
// topic name, and its memory about 64 bytes an instruction. Kafka has no
// such bound; subscriptions written to match topic names stay far below it
// (a 4 KB alternation of topic names compiles to a few hundred), while a
// 4 KB regex of counted repetitions can compile to two million. A heartbeat
// whose regex passes it gets INVALID_REGULAR_EXPRESSION.
const MaxSubscribedTopicRegexInstructions = 10_000

// regexInstBytes is what the coordinator counts for each instruction of a
// compiled regex in its group's MaxConsumerGroupBytes: the program and the
// matcher's queues.
const regexInstBytes = 64

// topicRegex is one compiled SubscribedTopicRegex, shared by the members
// that subscribe with its text.
type topicRegex struct {
	text  string
	re    *regexp.Regexp
	insts int
	refs  int // holders: members and heartbeats in flight; guarded by regexRegistry.mu

	// Guarded by Coordinator.mu: resolved once the worker has matched it
	// against every topic; topics are the topics that exist and match.
	resolved bool
	topics   map[string]struct{}
}

// cost is what a compiled regex counts for in its group's bytes.
func (r *topicRegex) cost() int { return len(r.text) + r.insts*regexInstBytes }

// matches reports whether topic was among the topics r matched when last
// resolved.
func (r *topicRegex) matches(topic string) bool {
	_, ok := r.topics[topic]
	return ok
}

// regexRegistry holds the compiled regexes in use, by text. It has a lock
// of its own, taken before or inside Coordinator.mu but never holding
// Coordinator.mu, so that heartbeats compile without the coordinator's.
type regexRegistry struct {
	mu        sync.Mutex
	byText    map[string]*topicRegex
	compiling map[string]chan struct{} // closed when the compile of a text ends
	compiles  int                      // how many compiles ran, for tests
	// hook, when set (tests), runs before each compile, without any lock.
	hook func(text string)
}

// acquire returns the compiled regex for text, compiling it when no one
// holds it yet, with one more holder that must release it; or an error
// saying why text is not a valid regex. Heartbeats carrying a text that
// is being compiled wait for that compile instead of running their own.
func (rr *regexRegistry) acquire(text string) (*topicRegex, error) {
	rr.mu.Lock()
	for {
		if r := rr.byText[text]; r != nil {
			r.refs++
			rr.mu.Unlock()
			return r, nil
		}
		wait := rr.compiling[text]
		if wait == nil {
			break
		}
		rr.mu.Unlock()
		<-wait
		rr.mu.Lock()
	}
	if rr.compiling == nil {
		rr.compiling = make(map[string]chan struct{})
		rr.byText = make(map[string]*topicRegex)
	}
	done := make(chan struct{})
	rr.compiling[text] = done
	rr.compiles++
	hook := rr.hook
	rr.mu.Unlock()

	if hook != nil {
		hook(text)
	}
	re, insts, err := compileTopicRegex(text)

	rr.mu.Lock()
	defer rr.mu.Unlock()
	delete(rr.compiling, text)
	close(done)
	if err != nil {
		return nil, err
	}
	r := &topicRegex{text: text, re: re, insts: insts, refs: 1}
	rr.byText[text] = r
	return r, nil
}

// retain adds a holder to r, which one of its holders vouches for.
func (rr *regexRegistry) retain(r *topicRegex) {
	rr.mu.Lock()
	r.refs++
	rr.mu.Unlock()
}

// release drops a holder of r; the last one forgets it.
func (rr *regexRegistry) release(r *topicRegex) {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	r.refs--
	if r.refs == 0 && rr.byText[r.text] == r {
		delete(rr.byText, r.text)
	}
}

// live returns the regexes held now.
func (rr *regexRegistry) live() []*topicRegex {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	out := make([]*topicRegex, 0, len(rr.byText))
	for _, r := range rr.byText {
		out = append(out, r)
	}
	return out
}

// compileTopicRegex compiles a SubscribedTopicRegex, which Kafka matches
// against the whole topic name with RE2/J, whose syntax Go's regexp
// shares, and returns its program's size. It refuses a text longer than
// MaxSubscribedTopicRegexBytes, one that does not parse on its own (so
// that "a)|(b" cannot escape the anchors), and one whose program would pass
// MaxSubscribedTopicRegexInstructions: the size is estimated on the parse
// tree first, so that a hostile text is refused before any program is
// built, then counted on the program.
func compileTopicRegex(s string) (*regexp.Regexp, int, error) {
	if len(s) > MaxSubscribedTopicRegexBytes {
		return nil, 0, fmt.Errorf("longer than %d bytes, vastfake's bound", MaxSubscribedTopicRegexBytes)
	}
	tree, err := syntax.Parse(s, syntax.Perl)
	if err != nil {
		return nil, 0, err
	}
	tooLarge := fmt.Errorf("it compiles to more than %d instructions, vastfake's bound on a regular expression's program", MaxSubscribedTopicRegexInstructions)
	if estimateInsts(tree, MaxSubscribedTopicRegexInstructions) > MaxSubscribedTopicRegexInstructions {
		return nil, 0, tooLarge
	}
	anchored := "^(?:" + s + ")$"
	tree, err = syntax.Parse(anchored, syntax.Perl)
	if err != nil {
		return nil, 0, err
	}
	prog, err := syntax.Compile(tree.Simplify())
	if err != nil {
		return nil, 0, err
	}
	if len(prog.Inst) > MaxSubscribedTopicRegexInstructions {
		return nil, 0, tooLarge
	}
	re, err := regexp.Compile(anchored)
	if err != nil {
		return nil, 0, err
	}
	return re, len(prog.Inst), nil
}

// estimateInsts estimates, from above, the instructions re compiles to,
// saturating past limit so that nested repetitions cannot overflow: a
// literal costs a rune each, a repetition its body times its count, an
// alternation or concatenation its parts plus one each.
func estimateInsts(re *syntax.Regexp, limit int) int {
	sat := func(n int) int { return min(n, limit+1) }
	switch re.Op {
	case syntax.OpLiteral:
		return sat(len(re.Rune) + 1)
	case syntax.OpCapture:
		return sat(estimateInsts(re.Sub[0], limit) + 2)
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest:
		return sat(estimateInsts(re.Sub[0], limit) + 1)
	case syntax.OpRepeat:
		n := re.Max
		if n < 0 {
			n = max(re.Min, 1)
		}
		return sat(estimateInsts(re.Sub[0], limit)*n + n + 1)
	case syntax.OpConcat, syntax.OpAlternate:
		t := 1
		for _, sub := range re.Sub {
			t = sat(t + estimateInsts(sub, limit) + 1)
		}
		return t
	}
	return 1
}

// ---- membership ----

// setMemberRegex makes r, whose hold the caller hands over, m's regex in
// place of the one it had, which it releases, and keeps the group's count
// of distinct regexes and bytes: a regex counts once per group however many
// members share it. Call it with c.mu held.
func (c *Coordinator) setMemberRegex(cg *consumerGroup, m *cmember, r *topicRegex) {
	if m.rx == r {
		if r != nil {
			c.regexes.release(r) // m already holds it
		}
		return
	}
	if old := m.rx; old != nil {
		cg.regexRefs[old]--
		if cg.regexRefs[old] == 0 {
			delete(cg.regexRefs, old)
			cg.bytes -= old.cost()
		}
		c.regexes.release(old)
	}
	m.rx = r
	if r != nil {
		if cg.regexRefs[r] == 0 {
			cg.bytes += r.cost()
		}
		cg.regexRefs[r]++
	}
}

// regexBytesDelta is how the group's bytes change when m's regex becomes
// r (nil: none).
func (cg *consumerGroup) regexBytesDelta(m *cmember, r *topicRegex) int {
	if m.rx == r {
		return 0
	}
	d := 0
	if m.rx != nil && cg.regexRefs[m.rx] == 1 {
		d -= m.rx.cost()
	}
	if r != nil && cg.regexRefs[r] == 0 {
		d += r.cost()
	}
	return d
}

// ---- resolution ----

// startRegexWorker starts the goroutine that resolves regexes, unless
// tests drive it by hand. Close stops it.
func (c *Coordinator) startRegexWorker() {
	c.regexKick = make(chan struct{}, 1)
	if c.regexesByHand {
		return
	}
	c.regexWorker.Add(1)
	go func() {
		defer c.regexWorker.Done()
		for {
			select {
			case <-c.done:
				return
			case <-c.regexKick:
				for c.resolveRegexesOnce() {
				}
			}
		}
	}()
}

// kickRegexes tells the worker there is work. Call it with c.mu held.
func (c *Coordinator) kickRegexes() {
	select {
	case c.regexKick <- struct{}{}:
	default:
	}
}

// resolveRegexes runs the worker's passes until nothing is left to
// resolve: what the worker does, in the caller's goroutine (tests).
func (c *Coordinator) resolveRegexes() {
	for c.resolveRegexesOnce() {
	}
}

// topicsCreated tells the worker that the topics named may be new, so
// that the regexes resolved so far are matched against them. Call it with
// c.mu held.
func (c *Coordinator) topicsCreated(names []string) {
	if len(names) == 0 {
		return
	}
	if c.regexPending == nil {
		c.regexPending = make(map[string]struct{})
	}
	for _, n := range names {
		c.regexPending[n] = struct{}{}
	}
	c.kickRegexes()
}

// topicsGone removes topics that no longer exist from every regex's
// resolution, at once: no matching is needed to forget them. Call it with
// c.mu held.
func (c *Coordinator) topicsGone(names []string) {
	if len(names) == 0 {
		return
	}
	for _, r := range c.regexes.live() {
		for _, n := range names {
			delete(r.topics, n)
		}
	}
}

// resolveRegexesOnce is one pass of the worker: under the lock it takes the
// regexes never resolved with every topic name, and the regexes resolved
// with the names of topics created since the last pass; it matches them
// without the lock, stopping if the coordinator closes; and under the lock
// again it installs the results, keeping only topics that still exist
// (topics created meanwhile are the next pass's), and starts a new epoch in
// every group whose regex subscription changed. It reports whether it had
// work.
func (c *Coordinator) resolveRegexesOnce() bool {
	c.regexPass.Lock() // one pass at a time, should tests run them from several goroutines
	defer c.regexPass.Unlock()
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return false
	}
	var fresh, known []*topicRegex
	for _, r := range c.regexes.live() {
		if r.resolved {
			known = append(known, r)
		} else {
			fresh = append(fresh, r)
		}
	}
	created := make([]string, 0, len(c.regexPending))
	if len(known) > 0 {
		for n := range c.regexPending {
			created = append(created, n)
		}
	}
	c.regexPending = nil
	if len(fresh) == 0 && len(created) == 0 {
		c.mu.Unlock()
		return false
	}
	var all []string
	if len(fresh) > 0 {
		all = make([]string, 0, len(c.topics))
		for n := range c.topics {
			all = append(all, n)
		}
	}
	c.mu.Unlock()

	match := func(r *topicRegex, names []string) ([]string, bool) {
		var out []string
		for _, n := range names {
			select {
			case <-c.done:
				return nil, false
			default:
			}
			if r.re.MatchString(n) {
				out = append(out, n)
			}
		}
		return out, true
	}
	freshHits := make([][]string, len(fresh))
	for i, r := range fresh {
		var ok bool
		if freshHits[i], ok = match(r, all); !ok {
			return false
		}
	}
	knownHits := make([][]string, len(known))
	for i, r := range known {
		var ok bool
		if knownHits[i], ok = match(r, created); !ok {
			return false
		}
	}

	c.mu.Lock()
	defer c.unlock()
	if c.closed {
		return false
	}
	changed := make(map[*topicRegex]bool)
	for i, r := range fresh {
		r.topics = make(map[string]struct{}, len(freshHits[i]))
		for _, n := range freshHits[i] {
			if _, ok := c.topics[n]; ok {
				r.topics[n] = struct{}{}
			}
		}
		r.resolved = true
		changed[r] = true
	}
	for i, r := range known {
		for _, n := range knownHits[i] {
			if _, ok := c.topics[n]; ok && !r.matches(n) {
				r.topics[n] = struct{}{}
				changed[r] = true
			}
		}
	}
	for _, g := range c.groups {
		cg := g.cg
		if cg == nil || len(cg.members) == 0 {
			continue
		}
		bump, newly := false, false
		for r := range cg.regexRefs {
			if !changed[r] {
				continue
			}
			if cg.resolved[r.text] {
				bump = true
			} else {
				newly = true
			}
		}
		if newly {
			c.markResolved(cg)
			bump = true
		}
		if bump {
			c.bumpGroupEpoch(g)
			c.noteStable(g)
		}
	}
	return true
}

// markResolved records, as the group's resolved regexes, every regex its
// members use that the worker has resolved; those it no longer uses are
// forgotten.
func (c *Coordinator) markResolved(cg *consumerGroup) {
	used := make(map[string]bool, len(cg.regexRefs))
	for r := range cg.regexRefs {
		if r.resolved {
			used[r.text] = true
		}
	}
	cg.resolved = used
}

// regexTopics returns the existing topics r matched, sorted.
func (c *Coordinator) regexTopics(r *topicRegex) []string {
	out := make([]string, 0, len(r.topics))
	for n := range r.topics {
		if _, ok := c.topics[n]; ok {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// regexHold is the compiled regex a heartbeat brought, held until a member
// takes it (updateSubscription) or the heartbeat ends.
type regexHold struct{ r *topicRegex }

// release lets go of the regex if no member took it.
func (h *regexHold) release(c *Coordinator) {
	if h.r != nil {
		c.regexes.release(h.r)
		h.r = nil
	}
}
