package rules

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestEveryRuleHasAnID: every field of Rules that switches a VAST behaviour
// has an ID (and with it a mode, a source and an audit case), so that a new
// rule cannot be added without one.
func TestEveryRuleHasAnID(t *testing.T) {
	t.Parallel()
	notRules := map[string]bool{"CooperativeAssignors": true, "OffsetsRetention": true, "Audit": true}
	typ := reflect.TypeOf(Rules{})
	n := 0
	for i := range typ.NumField() {
		name := typ.Field(i).Name
		if notRules[name] {
			continue
		}
		n++
		id, ok := Lookup(name)
		if !ok {
			t.Errorf("field %s has no rules.ID", name)
			continue
		}
		if id.String() != name || id.Source() == "" {
			t.Errorf("rule %s: name %q, source %q", name, id.String(), id.Source())
		}
	}
	if n != len(IDs()) {
		t.Errorf("%d rule fields, %d IDs", n, len(IDs()))
	}
}

func TestModes(t *testing.T) {
	t.Parallel()
	vast, kafka, audit := VAST(), Kafka(), AuditAll()
	for _, id := range IDs() {
		want := Enforce
		if id == StaleEndOffset {
			want = Off // off by default even in the VAST profile
		}
		if got := vast.Mode(id); got != want {
			t.Errorf("VAST %s: %v", id, got)
		}
		if got := kafka.Mode(id); got != Off {
			t.Errorf("Kafka %s: %v", id, got)
		}
		if got := audit.Mode(id); got != Audit {
			t.Errorf("AuditAll %s: %v", id, got)
		}
	}
	r := Kafka()
	r.SetMode(MaxGroups, Audit)
	if r.MaxGroups != 256 || r.Mode(MaxGroups) != Audit {
		t.Errorf("SetMode audit: MaxGroups %d, mode %v", r.MaxGroups, r.Mode(MaxGroups))
	}
	r.MaxGroups = 10
	r.SetMode(MaxGroups, Enforce)
	if r.MaxGroups != 10 || r.Mode(MaxGroups) != Enforce || r.Audit != nil {
		t.Errorf("SetMode enforce keeps a limit already set: %d %v %v", r.MaxGroups, r.Mode(MaxGroups), r.Audit)
	}
	r.SetMode(MaxGroups, Off)
	if r.MaxGroups != 0 || r.Mode(MaxGroups) != Off {
		t.Errorf("SetMode off: %d %v", r.MaxGroups, r.Mode(MaxGroups))
	}
	for _, id := range []ID{0, numIDs} {
		before := VAST()
		r := VAST()
		r.SetMode(id, Off)
		if !reflect.DeepEqual(r, before) {
			t.Errorf("SetMode(%d) changed the rules: %+v", id, r)
		}
	}
	if _, ok := ForProfile("audit"); !ok {
		t.Error("no audit profile")
	}
}

// TestMarkdownSourceLinks: the Kafka protocol support page, which every
// rule from it cites, is linked in Markdown reports.
func TestMarkdownSourceLinks(t *testing.T) {
	t.Parallel()
	md := MarkdownSource(NoCompression.Source())
	assert.Contains(t, md, "[VAST's Kafka protocol support page](https://kb.vastdata.com/documentation/docs/kafka-protocol-support)")
	assert.Contains(t, md, "VAST's Consume events page")
}

// TestEveryRuleHasAnAction: every rule's refusal message names the rule
// and one thing to do, as the compression refusal always did.
func TestEveryRuleHasAnAction(t *testing.T) {
	t.Parallel()
	for _, id := range IDs() {
		assert.NotEmpty(t, id.Action(), "rule %s", id)
		assert.Equal(t, "VAST refuses it (rule "+id.String()+"): "+id.Action(), id.Refusal("VAST refuses it", ""))
		assert.Equal(t, "VAST refuses it (rule "+id.String()+"): do this", id.Refusal("VAST refuses it", "do this"))
	}
	assert.Empty(t, ID(0).Action())
}

// TestCheck: enforced, a check refuses (only a refusal) and answers as
// VAST; audited, it records and answers as Kafka; off, it does neither.
func TestCheck(t *testing.T) {
	t.Parallel()
	r := VAST()
	r.Audit = []string{MaxGroups.String()}
	r.NoCompression = false
	m := r.Modes()
	for _, c := range []struct {
		id              ID
		kind            Kind
		vast            bool
		refused, record bool
	}{
		{EagerAssignorsOnly, Refused, true, true, false},
		{EagerAssignorsOnly, Differs, true, false, false},
		{MaxGroups, Refused, false, false, true},
		{MaxGroups, Differs, false, false, true},
		{NoCompression, Refused, false, false, false},
	} {
		var refused, recorded bool
		got := m.Check(c.id, c.kind, func() { refused = true }, func() { recorded = true })
		assert.Equal(t, c.vast, got, "%v %v", c.id, c.kind)
		assert.Equal(t, c.refused, refused, "%v %v refuses", c.id, c.kind)
		assert.Equal(t, c.record, recorded, "%v %v records", c.id, c.kind)
		assert.Equal(t, c.vast, m.Check(c.id, c.kind, nil, nil), "nil callbacks")
	}
}
