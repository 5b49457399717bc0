package coordinator

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vastfake/vastfake/clock"
	"github.com/vastfake/vastfake/rules"
)

// BenchmarkRebalance4Members forms one group of four members per iteration:
// MEMBER_ID_REQUIRED for each, four concurrent JoinGroups, the leader's
// SyncGroup and three followers' SyncGroups. Leaving and deleting the group
// afterwards is not timed.
func BenchmarkRebalance4Members(b *testing.B) {
	h := newHarness(b, rules.Kafka())
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		name := fmt.Sprint("g", i)
		ids, _ := h.stable(name, 4)
		b.StopTimer()
		l := kmsg.NewPtrLeaveGroupRequest()
		l.Version = 3
		l.Group = name
		for _, id := range ids {
			l.Members = append(l.Members, kmsg.LeaveGroupRequestMember{MemberID: id})
		}
		h.c.LeaveGroup(l)
		d := kmsg.NewPtrDeleteGroupsRequest()
		d.Groups = []string{name}
		if h.c.DeleteGroups(d).Groups[0].ErrorCode != errNone {
			b.Fatal("group not deleted")
		}
		b.StartTimer()
	}
}

// Benchmark256GroupsOf4 starts 256 groups (VAST's limit) of four members
// each, all 1024 members joining and syncing at once, on a fresh coordinator
// per iteration; each member runs in its own goroutine as a client
// connection would.
func Benchmark256GroupsOf4(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		c := New(Config{Rules: rules.VAST(), Clock: clock.NewManual(time.Unix(0, 0))})
		var wg sync.WaitGroup
		errs := make(chan error, 1024)
		for g := range 256 {
			name := fmt.Sprint("group-", g)
			ids := make([]string, 4)
			for i := range ids {
				r := c.JoinGroup(context.Background(), NoCaller, joinReq(name, ""))
				ids[i] = r.MemberID
			}
			for _, id := range ids {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs <- benchMember(c, name, id)
				}()
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				b.Fatal(err)
			}
		}
		for _, gi := range c.Groups() {
			if gi.State != "Stable" || len(gi.Members) != 4 {
				b.Fatalf("group %s: %s with %d members", gi.Name, gi.State, len(gi.Members))
			}
		}
		c.Close()
	}
}

// benchMember joins and syncs like a consumer: the leader assigns every
// member its own id.
func benchMember(c *Coordinator, group, id string) error {
	jr := c.JoinGroup(context.Background(), NoCaller, joinReq(group, id))
	if jr.ErrorCode != errNone {
		return fmt.Errorf("join %s: error %d", group, jr.ErrorCode)
	}
	assign := map[string]string{}
	for _, m := range jr.Members {
		assign[m.MemberID] = m.MemberID
	}
	sr := c.SyncGroup(context.Background(), syncReq(group, id, jr.Generation, assign))
	if sr.ErrorCode != errNone || string(sr.MemberAssignment) != id {
		return fmt.Errorf("sync %s: error %d, assignment %q", group, sr.ErrorCode, sr.MemberAssignment)
	}
	return nil
}
