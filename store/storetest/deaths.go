package storetest

import (
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

func (e *env) pendingDeaths(limit int) []job.ID {
	e.t.Helper()
	js, err := e.s.PendingDeaths(e.ctx, limit)
	if err != nil {
		e.t.Fatalf("PendingDeaths(%d): %v", limit, err)
	}
	if js == nil {
		e.t.Errorf("PendingDeaths(%d): got nil, want a list", limit)
	}
	return idsOf(js)
}

// noteDeaths notes the deaths PendingDeaths returns (up to 100), each
// with one job of kind "notify" whose args are the dead job's ID,
// validated at now; calls counts the calls of Notify.
func (e *env) noteDeaths(now time.Time, calls *int) store.NoteDeathsResult {
	e.t.Helper()
	dead, err := e.s.PendingDeaths(e.ctx, 100)
	if err != nil {
		e.t.Fatalf("PendingDeaths: %v", err)
	}
	return e.noteThese(now, dead, calls)
}

func (e *env) noteThese(now time.Time, dead []*job.Job, calls *int) store.NoteDeathsResult {
	e.t.Helper()
	r, err := e.s.NoteDeaths(e.ctx, store.NoteDeathsParams{Deaths: dead, Notify: deathNotify(e.t, now, calls)})
	if err != nil {
		e.t.Fatalf("NoteDeaths: %v", err)
	}
	return r
}

// deathNotify returns a Notify making one job of kind "notify" per death,
// its args the dead job's ID, counting its calls in *calls (if not nil).
func deathNotify(t *testing.T, now time.Time, calls *int) func(*job.Job) ([]*job.Job, error) {
	return func(d *job.Job) ([]*job.Job, error) {
		if calls != nil {
			*calls++
		}
		args, _ := json.Marshal(d.ID)
		return []*job.Job{validated(t, now, &job.Job{Kind: "notify", Queue: "notify", Args: args})}, nil
	}
}

// notifyArgs returns the args of the "notify" jobs, sorted.
func (e *env) notifyArgs() []string {
	e.t.Helper()
	js, err := e.s.List(e.ctx, store.ListParams{Kind: "notify", Limit: 1000})
	if err != nil {
		e.t.Fatalf("List(notify): %v", err)
	}
	var out []string
	for _, j := range js {
		out = append(out, string(j.Args))
	}
	slices.Sort(out)
	return out
}

func idText(id job.ID) string { return strconv.FormatInt(int64(id), 10) }

func deathCases() []testCase {
	return []testCase{
		{"DeathsPendingUntilNoted", func(t *testing.T, e *env) {
			if got := e.pendingDeaths(10); len(got) != 0 {
				t.Fatalf("PendingDeaths on an empty store: got %v, want none", got)
			}
			a := e.inState(at(1), &job.Job{Kind: "a"}, job.StateDead)
			e.inState(at(2), &job.Job{Kind: "done"}, job.StateCompleted)
			e.inState(at(3), &job.Job{Kind: "gone"}, job.StateCancelled)
			b := e.inState(at(4), &job.Job{Kind: "b"}, job.StateDead)
			pill := e.add(at(5), &job.Job{Kind: "pill"})
			e.claimAndExpire(5, pill, 1) // dead by a rescue
			wantIDList(t, "PendingDeaths", e.pendingDeaths(10), []job.ID{a.ID, b.ID, pill})
			wantIDList(t, "PendingDeaths(limit 2)", e.pendingDeaths(2), []job.ID{a.ID, b.ID})
			calls := 0
			r := e.noteDeaths(at(2000), &calls)
			wantIDList(t, "NoteDeaths noted", r.Noted, []job.ID{a.ID, b.ID, pill})
			if calls != 3 || len(r.Jobs) != 3 {
				t.Errorf("NoteDeaths: Notify called %d times, %d jobs enqueued; want 3 and 3", calls, len(r.Jobs))
			}
			for _, id := range r.Jobs {
				if j := e.get(id); j.Kind != "notify" || j.State != job.StateAvailable {
					t.Errorf("notification job %d: got %s %s, want notify available", id, j.Kind, j.State)
				}
			}
			if got := e.pendingDeaths(10); len(got) != 0 {
				t.Errorf("PendingDeaths after NoteDeaths: got %v, want none", got)
			}
			// Noting the same deaths again (a process that read them
			// before another noted them) enqueues nothing.
			calls = 0
			if r := e.noteThese(at(3000), []*job.Job{a, b}, &calls); len(r.Noted) != 0 || len(r.Jobs) != 0 || calls != 0 {
				t.Errorf("NoteDeaths of noted deaths: got %+v after %d Notify calls, want nothing", r, calls)
			}
			wantArgs := []string{idText(a.ID), idText(b.ID), idText(pill)}
			slices.Sort(wantArgs)
			if got := e.notifyArgs(); !slices.Equal(got, wantArgs) {
				t.Errorf("notification jobs' args: got %v, want %v", got, wantArgs)
			}
		}},
		{"DeathRetriedDiesAgainUnnoted", func(t *testing.T, e *env) {
			d := e.inState(at(1), &job.Job{Kind: "d", Queue: "d"}, job.StateDead)
			e.noteDeaths(at(2), nil)
			e.retryDead(store.RetryDeadParams{Now: at(10), IDs: []job.ID{d.ID}}, 1)
			if got := e.pendingDeaths(10); len(got) != 0 {
				t.Errorf("PendingDeaths of a retried job: got %v, want none", got)
			}
			// A death read before the retry is not the job's any more.
			if r := e.noteThese(at(11), []*job.Job{d}, nil); len(r.Noted) != 0 {
				t.Errorf("NoteDeaths of a retried job's former death: noted %v, want none", r.Noted)
			}
			c := e.claimExpect(at(20), "d", d.ID)
			e.finishOne(at(30), c, store.Outcome{State: job.StateDead, Error: "again"})
			wantIDList(t, "PendingDeaths after a second death", e.pendingDeaths(10), []job.ID{d.ID})
			// The first death, read before, does not note the second.
			if r := e.noteThese(at(40), []*job.Job{d}, nil); len(r.Noted) != 0 {
				t.Errorf("NoteDeaths of the first death: noted %v, want none", r.Noted)
			}
			if r := e.noteDeaths(at(40), nil); !slices.Equal(r.Noted, []job.ID{d.ID}) || len(r.Jobs) != 1 {
				t.Errorf("NoteDeaths of the second death: got %+v, want job %d noted with one notification", r, d.ID)
			}
			e.purge(store.PurgeParams{States: []job.State{job.StateDead}, All: true}, 1)
			g := e.inState(at(50), &job.Job{Kind: "g", Queue: "g"}, job.StateDead)
			e.purge(store.PurgeParams{States: []job.State{job.StateDead}, IDs: []job.ID{g.ID}}, 1)
			if got := e.pendingDeaths(10); len(got) != 0 {
				t.Errorf("PendingDeaths after a purge: got %v, want none", got)
			}
			if r := e.noteThese(at(60), []*job.Job{g}, nil); len(r.Noted) != 0 {
				t.Errorf("NoteDeaths of a deleted job: noted %v, want none", r.Noted)
			}
		}},
		{"DeathNoteAllOrNothing", func(t *testing.T, e *env) {
			d := e.inState(at(1), &job.Job{Kind: "d"}, job.StateDead)
			boom := errors.New("boom")
			_, err := e.s.NoteDeaths(e.ctx, store.NoteDeathsParams{Deaths: []*job.Job{d},
				Notify: func(*job.Job) ([]*job.Job, error) { return nil, boom }})
			if !errors.Is(err, boom) {
				t.Errorf("NoteDeaths with a failing Notify: got %v, want boom", err)
			}
			_, err = e.s.NoteDeaths(e.ctx, store.NoteDeathsParams{Deaths: []*job.Job{d},
				Notify: func(*job.Job) ([]*job.Job, error) { return []*job.Job{{Kind: "notify"}}, nil }})
			var fe *job.FieldError
			if !errors.As(err, &fe) {
				t.Errorf("NoteDeaths with an unvalidated job: got %v, want a *job.FieldError", err)
			}
			wantIDList(t, "PendingDeaths after failed notes", e.pendingDeaths(10), []job.ID{d.ID})
			if got := e.notifyArgs(); len(got) != 0 {
				t.Errorf("notification jobs after failed notes: got %v, want none", got)
			}
			if _, err := e.s.PendingDeaths(e.ctx, 0); !errors.As(err, &fe) || fe.Field != "limit" {
				t.Errorf("PendingDeaths(0): got %v, want a *job.FieldError on limit", err)
			}
		}},
		{"DeathConcurrentNotesOnce", func(t *testing.T, e *env) {
			var ids []job.ID
			for i := range 5 {
				ids = append(ids, e.inState(at(i), &job.Job{Kind: "d"}, job.StateDead).ID)
			}
			dead, err := e.s.PendingDeaths(e.ctx, 10)
			if err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			var noted []job.ID
			var wg sync.WaitGroup
			for range 8 {
				wg.Go(func() {
					r, err := e.s.NoteDeaths(e.ctx, store.NoteDeathsParams{Deaths: dead, Notify: deathNotify(t, at(100), nil)})
					if err != nil {
						t.Errorf("NoteDeaths: %v", err)
						return
					}
					if len(r.Jobs) != len(r.Noted) {
						t.Errorf("NoteDeaths: %d noted, %d jobs, want as many", len(r.Noted), len(r.Jobs))
					}
					mu.Lock()
					noted = append(noted, r.Noted...)
					mu.Unlock()
				})
			}
			wg.Wait()
			slices.Sort(noted)
			wantIDList(t, "deaths noted by 8 concurrent NoteDeaths", noted, ids)
			if got := e.notifyArgs(); len(got) != len(ids) {
				t.Errorf("notification jobs: got %d (%v), want %d, one per death", len(got), got, len(ids))
			}
		}},
	}
}
