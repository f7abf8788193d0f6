package storetest

import (
	"testing"
	"time"

	"github.com/hopperq/hopper/store"
)

// leaderCases check store.Leader, for stores that implement it.
func leaderCases() []testCase {
	lead := func(e *env, ms int, holder string) store.LeadResult {
		e.t.Helper()
		l, ok := e.s.(store.Leader)
		if !ok {
			e.t.Skip("the store does not implement store.Leader")
		}
		res, err := l.Lead(e.ctx, store.LeadParams{Now: at(ms), Name: "maintenance", Holder: holder, TTL: 10 * time.Second})
		if err != nil {
			e.t.Fatalf("Lead(%s at %d ms): %v", holder, ms, err)
		}
		return res
	}
	want := func(t *testing.T, what string, got store.LeadResult, leader bool, holder string, term int64, until time.Time) {
		t.Helper()
		if got.Leader != leader || got.Holder != holder || got.Term != term || !got.Until.Equal(until) {
			t.Errorf("%s: got %+v, want leader %v holder %s term %d until %v", what, got, leader, holder, term, until)
		}
	}
	return []testCase{
		{"LeaderOneAtATime", func(t *testing.T, e *env) {
			want(t, "first asker", lead(e, 0, worker1), true, worker1, 1, at(10000))
			want(t, "second asker", lead(e, 1000, worker2), false, worker1, 1, at(10000))
			want(t, "renewal", lead(e, 5000, worker1), true, worker1, 1, at(15000))
			want(t, "second asker before expiry", lead(e, 14999, worker2), false, worker1, 1, at(15000))
			want(t, "second asker after expiry", lead(e, 15000, worker2), true, worker2, 2, at(25000))
			want(t, "the deposed leader wakes up", lead(e, 16000, worker1), false, worker2, 2, at(25000))
		}},
		{"LeaderResign", func(t *testing.T, e *env) {
			first := lead(e, 0, worker1)
			l := e.s.(store.Leader)
			if err := l.Resign(e.ctx, store.LeadParams{Now: at(1), Name: "maintenance", Holder: worker2, Term: first.Term}); err != nil {
				t.Fatal(err)
			}
			want(t, "after a resign by a non-holder", lead(e, 2, worker2), false, worker1, 1, at(10000))
			if err := l.Resign(e.ctx, store.LeadParams{Now: at(3), Name: "maintenance", Holder: worker1, Term: first.Term}); err != nil {
				t.Fatal(err)
			}
			want(t, "after the holder resigned", lead(e, 4, worker2), true, worker2, 2, at(10004))
		}},
	}
}
