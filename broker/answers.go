package broker

// Large answers, bounded as large requests are (buffers.go). A small
// request can ask for a large answer: ConsumerGroupDescribe or
// DescribeGroups of groups with megabytes of subscriptions or member
// metadata, OffsetFetch or Metadata of every partition, ListGroups,
// DescribeConfigs of many topics. Encoding such an answer costs its size
// again, so concurrent ones would cost their sum, and the heap they grow
// stays resident long after. So every answer but a Produce's (as large as
// its request) and a Fetch's (bounded by the fetch's max bytes, encoded
// into a free-list buffer of its exact size) is measured before it is
// encoded (answerSizeBound, from above, without encoding); one of
// largeAnswerBytes or more is encoded into a buffer of that size and
// written under the broker's answer budget: at most answerBudgetBytes of
// large answers are encoded or being written at once, broker-wide, so that
// four concurrent describes of big groups cost what one does, the others
// waiting their turn; and after one of reclaimAnswerAfter bytes or more the
// broker collects its garbage and gives the memory back, as after a large
// request.

import (
	"reflect"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	// largeAnswerBytes is the least answer the budget counts.
	largeAnswerBytes = 1 << 20
	// answerBudgetBytes is how many bytes of large answers may be
	// encoded or written at once; an answer larger than it takes it
	// whole, alone.
	answerBudgetBytes = 16 << 20
	// reclaimAnswerAfter is the least answer after which the broker
	// collects its garbage (reclaimLarge).
	reclaimAnswerAfter = 8 << 20
)

// unbudgetedAnswers are the APIs whose answers skip the budget, each with
// the reason (TestEveryLargeAnswerTakesTheBudget checks that no other
// does).
var unbudgetedAnswers = map[kmsg.Key]string{
	kmsg.Produce: "an answer is as large as its request's partitions, which the request's own bounds cover",
	kmsg.Fetch:   "records, bounded by the fetch's max bytes (55 MiB at most) and encoded into a free-list buffer of their size",
}

// answerBudget is a broker's budget of large-answer bytes. The zero value
// is ready: nothing in use.
type answerBudget struct {
	mu      sync.Mutex
	used    int
	changed chan struct{} // closed and replaced whenever bytes are given back
	// taken counts the answers that took the budget, for tests.
	taken int
}

// acquire takes n bytes of the budget (at most answerBudgetBytes), waiting
// until they fit, and returns the function that gives them back; it
// returns nil if done is closed first.
func (ab *answerBudget) acquire(done <-chan struct{}, n int) func() {
	n = min(n, answerBudgetBytes)
	for {
		ab.mu.Lock()
		if ab.used+n <= answerBudgetBytes {
			ab.used += n
			ab.taken++
			ab.mu.Unlock()
			return sync.OnceFunc(func() { ab.give(n) })
		}
		if ab.changed == nil {
			ab.changed = make(chan struct{})
		}
		wait := ab.changed
		ab.mu.Unlock()
		select {
		case <-wait:
		case <-done:
			return nil
		}
	}
}

func (ab *answerBudget) give(n int) {
	ab.mu.Lock()
	defer ab.mu.Unlock()
	ab.used -= n
	if ab.changed != nil {
		close(ab.changed)
		ab.changed = nil
	}
}

// budgetAnswer prepares the connection to write resp, the answer to key:
// a large one takes its share of the broker's answer budget, waiting for
// it, and is encoded into a buffer of its measured size; it returns the
// function that gives the share back once the answer is written, or nil
// when the connection closed while it waited.
func (c *clientConn) budgetAnswer(key int16, resp kmsg.Response) func() {
	if _, skip := unbudgetedAnswers[kmsg.Key(key)]; skip || resp == nil {
		return func() {}
	}
	n := answerSizeBound(resp)
	if n < c.b.largeAnswer() {
		return func() {}
	}
	end := c.b.answers.acquire(c.ctx.Done(), n)
	if end == nil {
		return nil
	}
	c.answerHint = n
	if n >= reclaimAnswerAfter {
		c.reclaim = true
	}
	return end
}

// largeAnswer is the least answer the budget counts: largeAnswerBytes, or
// what a test set.
func (b *Broker) largeAnswer() int {
	if b.largeAnswerForTest > 0 {
		return b.largeAnswerForTest
	}
	return largeAnswerBytes
}

// answerSizeBound returns at least the bytes resp encodes to, at any
// version, without encoding it: every integer at its widest (varints
// included), every string, byte array and array with its longest length
// prefix, every struct with room for its tags.
func answerSizeBound(resp kmsg.Response) int {
	return sizeBound(reflect.ValueOf(resp))
}

// Widest encodings: a compact length or a tag count is an unsigned varint
// of up to 5 bytes; a varlong up to 10.
const (
	maxLenPrefix = 5
	maxVarlong   = 10
)

// sizePlan is what sizeBound knows of a struct type: the bytes of its
// fixed-size fields, and the fields it must walk.
type sizePlan struct {
	fixed int
	walk  []int
}

var sizePlans sync.Map // reflect.Type → *sizePlan

var tagsType = reflect.TypeFor[kmsg.Tags]()

// scalarBound is the widest encoding of a value of kind k, or -1 when k is
// not a scalar.
func scalarBound(t reflect.Type) int {
	switch t.Kind() {
	case reflect.Bool, reflect.Int8, reflect.Uint8:
		return 1
	case reflect.Int16, reflect.Uint16:
		return 2
	case reflect.Int32, reflect.Uint32:
		return maxLenPrefix // an int32 or a varint
	case reflect.Int64, reflect.Uint64, reflect.Float64, reflect.Int:
		return maxVarlong
	case reflect.Array:
		if e := scalarBound(t.Elem()); e >= 0 {
			return t.Len() * e
		}
	}
	return -1
}

func planFor(t reflect.Type) *sizePlan {
	if p, ok := sizePlans.Load(t); ok {
		return p.(*sizePlan)
	}
	p := &sizePlan{fixed: maxLenPrefix} // its tag count
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		if s := scalarBound(f.Type); s >= 0 {
			p.fixed += s
			continue
		}
		p.walk = append(p.walk, i)
	}
	sizePlans.Store(t, p)
	return p
}

func sizeBound(v reflect.Value) int {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return maxLenPrefix
		}
		return sizeBound(v.Elem())
	case reflect.String:
		return maxLenPrefix + v.Len()
	case reflect.Slice:
		et := v.Type().Elem()
		if s := scalarBound(et); s >= 0 {
			return maxLenPrefix + v.Len()*s
		}
		n := maxLenPrefix
		for i := range v.Len() {
			n += sizeBound(v.Index(i))
		}
		return n
	case reflect.Struct:
		if v.Type() == tagsType {
			t := v.Addr().Interface().(*kmsg.Tags)
			n := 0
			t.Each(func(_ uint32, b []byte) { n += 2*maxLenPrefix + len(b) })
			return n
		}
		p := planFor(v.Type())
		n := p.fixed
		for _, i := range p.walk {
			n += sizeBound(v.Field(i))
		}
		return n
	}
	if s := scalarBound(v.Type()); s >= 0 {
		return s
	}
	return 0
}
