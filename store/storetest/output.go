package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// outputs reads the outputs of job id (of attempt att if positive).
func (e *env) outputs(id job.ID, att int) []*job.Output {
	e.t.Helper()
	out, err := e.s.Outputs(e.ctx, store.OutputsParams{ID: id, Attempt: att})
	if err != nil {
		e.t.Fatalf("Outputs(%d, %d): %v", id, att, err)
	}
	return out
}

// packed packs an output whose streams hold stdout, stderr and log, each
// written in full but for dropped bytes of stdout.
func packed(stdout, stderr, log string, dropped int64) *store.PackedOutput {
	return store.PackOutput(&job.Output{
		Stdout: job.Stream{Data: []byte(stdout), Size: int64(len(stdout)) + dropped},
		Stderr: job.Stream{Data: []byte(stderr), Size: int64(len(stderr))},
		Log:    job.Stream{Data: []byte(log), Size: int64(len(log))},
	})
}

// runOnce enqueues a job (of schedule sched, if set, fired at ms) at ms,
// claims it and finishes its attempt at ms+1 in state st with an output
// naming the job; it returns the job's ID.
func (e *env) runOnce(ms int, sched string, st job.State) job.ID {
	e.t.Helper()
	j := &job.Job{Kind: "k", Queue: fmt.Sprintf("q%d", ms)}
	if sched != "" {
		j.Schedule, j.FireTime = sched, at(ms)
	}
	id := e.add(at(ms), j)
	c := e.claimExpect(at(ms), j.Queue, id)
	o := store.Outcome{State: st, Output: packed(fmt.Sprintf("run %d\n", id), "", "", 0)}
	if st == job.StateRetrying {
		o.RunAt = at(ms + 100_000)
	}
	e.finishOne(at(ms+1), c, o)
	return id
}

// wantKept fails unless the jobs of ids have an output each (keep) or none.
func (e *env) wantKept(what string, ids []job.ID, keep func(i int) bool) {
	e.t.Helper()
	for i, id := range ids {
		if got, want := len(e.outputs(id, 0)), map[bool]int{true: 1, false: 0}[keep(i)]; got != want {
			e.t.Errorf("%s: run %d (job %d): got %d outputs, want %d", what, i, id, got, want)
		}
	}
}

func outputCases() []testCase {
	return []testCase{
		{"OutputsRoundTrip", func(t *testing.T, e *env) {
			id := e.add(t0, &job.Job{Kind: "k"})
			c := e.claimExpect(t0, job.DefaultQueue, id)
			// A megabyte of output, bytes that are not UTF-8 and a NUL
			// among them: kept exactly.
			big := bytes.Repeat([]byte("line of output \xff\x00\n"), 1<<16)
			want := &job.Output{
				Stdout: job.Stream{Data: big, Size: int64(len(big)) + 12345},
				Stderr: job.Stream{Data: []byte("warning: <b>&amp;</b>\n"), Size: 22},
				Log:    job.Stream{Data: []byte("time=… level=INFO msg=hello\n"), Size: 30},
			}
			p := store.PackOutput(want)
			if len(p.Stdout) >= len(big)/10 {
				t.Errorf("packed stdout: got %d bytes for %d, want it compressed", len(p.Stdout), len(big))
			}
			e.finishOne(at(1500), c, store.Outcome{State: job.StateCompleted, Output: p})
			got := e.outputs(id, 0)
			if len(got) != 1 {
				t.Fatalf("Outputs: got %d, want 1", len(got))
			}
			g := got[0]
			if g.ID != id || g.Attempt != 1 || !g.Succeeded || g.Schedule != "" {
				t.Errorf("output: got job %d attempt %d succeeded %v schedule %q, want %d 1 true \"\"", g.ID, g.Attempt, g.Succeeded, g.Schedule, id)
			}
			wantTime(t, "FinishedAt", g.FinishedAt, at(1500))
			for _, s := range []struct {
				name      string
				got, want job.Stream
			}{{"stdout", g.Stdout, want.Stdout}, {"stderr", g.Stderr, want.Stderr}, {"log", g.Log, want.Log}} {
				if !bytes.Equal(s.got.Data, s.want.Data) || s.got.Size != s.want.Size {
					t.Errorf("%s: got %d bytes (size %d), want %d (size %d)", s.name, len(s.got.Data), s.got.Size, len(s.want.Data), s.want.Size)
				}
			}
			if !g.Stdout.Truncated() || g.Stderr.Truncated() {
				t.Errorf("Truncated: got stdout %v stderr %v, want true false", g.Stdout.Truncated(), g.Stderr.Truncated())
			}
			if n := len(e.outputs(id, 2)); n != 0 {
				t.Errorf("Outputs of attempt 2: got %d, want none", n)
			}
			if n := len(e.outputs(id+1000, 0)); n != 0 {
				t.Errorf("Outputs of a missing job: got %d, want none", n)
			}
		}},
		{"OutputsPerAttempt", func(t *testing.T, e *env) {
			id := e.add(t0, &job.Job{Kind: "k"})
			c := e.claimExpect(t0, job.DefaultQueue, id)
			e.finishOne(at(10), c, store.Outcome{State: job.StateRetrying, RunAt: at(20), Error: "boom",
				Output: packed("", "first\n", "", 0)})
			// A released attempt's run is not counted: its output is that of
			// attempt 2 until the next run of attempt 2 replaces it.
			c = e.claimExpect(at(20), job.DefaultQueue, id)
			e.finishOne(at(30), c, store.Outcome{State: job.StateAvailable, Output: packed("released\n", "", "", 0)})
			c = e.claimExpect(at(40), job.DefaultQueue, id)
			// An attempt that wrote nothing keeps no output.
			e.finishOne(at(50), c, store.Outcome{State: job.StateRetrying, RunAt: at(60), Error: "again"})
			c = e.claimExpect(at(60), job.DefaultQueue, id)
			if c.Attempt != 3 {
				t.Fatalf("attempt: got %d, want 3", c.Attempt)
			}
			e.finishOne(at(70), c, store.Outcome{State: job.StateCompleted, Output: packed("done\n", "", "", 0)})
			got := e.outputs(id, 0)
			if len(got) != 3 {
				t.Fatalf("Outputs: got %d, want 3 (attempts 1, 2 released, 3)", len(got))
			}
			for i, w := range []struct {
				att    int
				ok     bool
				stdout string
			}{{1, false, ""}, {2, false, "released\n"}, {3, true, "done\n"}} {
				if g := got[i]; g.Attempt != w.att || g.Succeeded != w.ok || string(g.Stdout.Data) != w.stdout {
					t.Errorf("output %d: got attempt %d succeeded %v stdout %q, want %d %v %q", i, g.Attempt, g.Succeeded, g.Stdout.Data, w.att, w.ok, w.stdout)
				}
			}
			if one := e.outputs(id, 1); len(one) != 1 || string(one[0].Stderr.Data) != "first\n" {
				t.Errorf("Outputs of attempt 1: got %d, want its stderr", len(one))
			}
		}},
		{"OutputsLeaseLost", func(t *testing.T, e *env) {
			id := e.add(t0, &job.Job{Kind: "k"})
			c := e.claimExpect(t0, job.DefaultQueue, id)
			ok := e.finish(at(10), store.Outcome{ID: id, Attempt: c.Attempt + 1, Claim: c.Claims, State: job.StateCompleted,
				Record: record(c, at(10), "completed", ""), Output: packed("lost\n", "", "", 0)})
			if ok[0] {
				t.Fatal("Finish of another attempt applied")
			}
			if n := len(e.outputs(id, 0)); n != 0 {
				t.Errorf("Outputs after a skipped outcome: got %d, want none", n)
			}
		}},
		{"OutputsDeletedWithJob", func(t *testing.T, e *env) {
			a := e.runOnce(0, "", job.StateCompleted)
			b := e.runOnce(10, "", job.StateCompleted)
			e.purge(store.PurgeParams{States: []job.State{job.StateCompleted}, IDs: []job.ID{a}}, 1)
			if n := len(e.outputs(a, 0)); n != 0 {
				t.Errorf("Outputs of a purged job: got %d, want none", n)
			}
			if n := len(e.outputs(b, 0)); n != 1 {
				t.Errorf("Outputs of the job kept: got %d, want 1", n)
			}
			e.matchAll(deleteMatching, store.MatchParams{Now: at(100), States: []job.State{job.StateCompleted}, UpTo: b})
			if n := len(e.outputs(b, 0)); n != 0 {
				t.Errorf("Outputs of a job deleted by DeleteMatching: got %d, want none", n)
			}
		}},
		{"PruneOutputsByCount", func(t *testing.T, e *env) {
			// 5 successes and 12 failures, alternating in time, then a run
			// of another schedule and one of none.
			var ids []job.ID
			var ok []bool
			for i := range 17 {
				st := job.StateDead
				if i%3 == 0 && i < 15 {
					st = job.StateCompleted
				}
				ids = append(ids, e.runOnce(i*10, "nightly", st))
				ok = append(ok, st == job.StateCompleted)
			}
			if countTrue(ok) != 5 {
				t.Fatalf("setup: %d successes, want 5", countTrue(ok))
			}
			other := e.runOnce(1000, "hourly", job.StateDead)
			plain := e.runOnce(1010, "", job.StateDead)
			n, err := e.s.PruneOutputs(e.ctx, store.PruneOutputsParams{Now: at(2000), Schedule: "nightly",
				Keep: job.OutputRetention{}.Resolved()})
			if err != nil || n != 4 {
				t.Fatalf("PruneOutputs: got %d, %v; want 4 (2 successes, 2 failures)", n, err)
			}
			// The newest 3 successes and 10 failures stay.
			okSeen, failSeen := 0, 0
			keep := make([]bool, len(ids))
			for i := len(ids) - 1; i >= 0; i-- {
				if ok[i] {
					okSeen++
					keep[i] = okSeen <= 3
				} else {
					failSeen++
					keep[i] = failSeen <= 10
				}
			}
			e.wantKept("after pruning", ids, func(i int) bool { return keep[i] })
			e.wantKept("other schedule, no schedule", []job.ID{other, plain}, func(int) bool { return true })
			// None kept.
			n, err = e.s.PruneOutputs(e.ctx, store.PruneOutputsParams{Now: at(2000), Schedule: "nightly",
				Keep: job.OutputRetention{Succeeded: -1, Failed: -1}.Resolved()})
			if err != nil || n != 13 {
				t.Fatalf("PruneOutputs keeping none: got %d, %v; want 13", n, err)
			}
			e.wantKept("keeping none", ids, func(int) bool { return false })
			if j := e.get(ids[0]); j.State != job.StateCompleted {
				t.Errorf("a pruned run's job: got %s, want it kept (completed)", j.State)
			}
		}},
		{"PruneOutputsByAge", func(t *testing.T, e *env) {
			var ids []job.ID
			for i := range 4 {
				ids = append(ids, e.runOnce(i*60_000, "minutely", job.StateCompleted))
			}
			// Finished at 1 ms, 60.001 s, 120.001 s, 180.001 s; at 200 s
			// with a maximum age of 100 s, the first two go.
			n, err := e.s.PruneOutputs(e.ctx, store.PruneOutputsParams{Now: at(200_000), Schedule: "minutely",
				Keep: job.OutputRetention{Succeeded: 10, MaxAge: 100 * time.Second}.Resolved()})
			if err != nil || n != 2 {
				t.Fatalf("PruneOutputs by age: got %d, %v; want 2", n, err)
			}
			e.wantKept("after pruning by age", ids, func(i int) bool { return i >= 2 })
		}},
		{"ScheduleOutputRetention", func(t *testing.T, e *env) {
			r := job.OutputRetention{Succeeded: 1, Failed: -1, MaxAge: 90 * time.Minute}
			e.addSchedule(&job.Schedule{Name: "kept", Spec: "@hourly", Kind: "k", NextRunAt: at(1000), CreatedAt: t0, OutputRetention: r})
			e.addSchedule(&job.Schedule{Name: "defaults", Spec: "@hourly", Kind: "k", NextRunAt: at(1000), CreatedAt: t0})
			if g := e.getSchedule("kept").OutputRetention; g != r {
				t.Errorf("OutputRetention: got %+v, want %+v", g, r)
			}
			if g := e.getSchedule("defaults").OutputRetention; g != (job.OutputRetention{}) {
				t.Errorf("OutputRetention of a schedule without one: got %+v, want zero", g)
			}
			bad := &job.Schedule{Name: "bad", Spec: "@hourly", Kind: "k", NextRunAt: at(1000), CreatedAt: t0,
				OutputRetention: job.OutputRetention{MaxAge: -time.Hour}}
			var fe *job.FieldError
			if err := e.s.AddSchedule(e.ctx, store.AddScheduleParams{Schedule: bad}); !errors.As(err, &fe) || fe.Field != "output_retention.max_age" {
				t.Errorf("AddSchedule with a negative max age: got %v, want a *job.FieldError on output_retention.max_age", err)
			}
		}},
		{"PruneOutputsInvalid", func(t *testing.T, e *env) {
			for _, p := range []store.PruneOutputsParams{
				{Now: t0},
				{Now: t0, Schedule: "s", Keep: job.OutputRetention{Succeeded: -1}},
				{Now: t0, Schedule: "s", Keep: job.OutputRetention{MaxAge: -time.Second}},
			} {
				var fe *job.FieldError
				if _, err := e.s.PruneOutputs(e.ctx, p); !errors.As(err, &fe) {
					t.Errorf("PruneOutputs(%+v): got %v, want a *job.FieldError", p, err)
				}
			}
		}},
	}
}

func countTrue(bs []bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}
