package storetest

import (
	"errors"
	"math"
	"strconv"
	"testing"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// boundCases check that every store keeps the integer fields of jobs and
// schedules up to job's bounds exactly, and refuses values beyond them —
// including those a 32-bit column could not hold — with a *job.FieldError
// naming the field, changing nothing.
func boundCases() []testCase {
	// beyondInt32 is what PostgreSQL's integer columns cannot hold (a
	// variable: a constant would not compile for 32-bit platforms).
	beyondInt32 := int64(math.MaxInt32) + 5
	bad := []struct {
		field string
		set   func(*job.Job)
	}{
		{"max_attempts", func(j *job.Job) { j.MaxAttempts = job.MaxAttemptsLimit + 1 }},
		{"max_attempts", func(j *job.Job) { j.MaxAttempts = int(beyondInt32) }},
		{"priority", func(j *job.Job) { j.Priority = job.MaxPriority + 1 }},
		{"priority", func(j *job.Job) { j.Priority = job.MinPriority - 1 }},
		{"priority", func(j *job.Job) { j.Priority = int(-beyondInt32) }},
	}
	return []testCase{
		{"BoundsAreKeptExactly", func(t *testing.T, e *env) {
			hi := e.add(t0, &job.Job{Kind: "k", MaxAttempts: job.MaxAttemptsLimit, Priority: job.MaxPriority})
			lo := e.add(t0, &job.Job{Kind: "k", MaxAttempts: 1, Priority: job.MinPriority})
			for _, c := range []struct {
				id             job.ID
				attempts, prio int
			}{{hi, job.MaxAttemptsLimit, job.MaxPriority}, {lo, 1, job.MinPriority}} {
				if g := e.get(c.id); g.MaxAttempts != c.attempts || g.Priority != c.prio {
					t.Errorf("job %d: max attempts %d priority %d, want %d %d", c.id, g.MaxAttempts, g.Priority, c.attempts, c.prio)
				}
			}
			if got := e.claimIDs(t0, 1); len(got) != 1 || got[0] != lo {
				t.Errorf("first claim: %v, want the job of priority %d (%d)", got, job.MinPriority, lo)
			}
			sc := newSchedule("s", at(60000))
			sc.MaxAttempts, sc.Priority = job.MaxAttemptsLimit, job.MinPriority
			e.addSchedule(sc)
			if g := e.getSchedule("s"); g.MaxAttempts != job.MaxAttemptsLimit || g.Priority != job.MinPriority {
				t.Errorf("schedule: max attempts %d priority %d, want %d %d", g.MaxAttempts, g.Priority, job.MaxAttemptsLimit, job.MinPriority)
			}
		}},
		{"EnqueueBeyondBoundsIsRefused", func(t *testing.T, e *env) {
			// The jobs pass job.Job.Validate, then get a value beyond the
			// bounds, as from a caller of the store that skips it.
			for _, b := range bad {
				ok := validated(t, t0, &job.Job{Kind: "ok"})
				j := validated(t, t0, &job.Job{Kind: "k"})
				b.set(j)
				var fe *job.FieldError
				if res, err := e.s.Enqueue(e.ctx, store.EnqueueParams{Now: t0, Jobs: []*job.Job{ok, j}}); !errors.As(err, &fe) || fe.Field != b.field {
					t.Errorf("Enqueue(max attempts %d, priority %d): got %v, %v, want a *job.FieldError on %s",
						j.MaxAttempts, j.Priority, res, err, b.field)
				}
			}
			if all := e.all(); len(all) != 0 {
				t.Errorf("after refused batches the store holds %d jobs, want none", len(all))
			}
		}},
		{"RescheduleBeyondBoundsIsRefused", func(t *testing.T, e *env) {
			j := e.inState(t0, &job.Job{Kind: "k"}, job.StateScheduled)
			for _, p := range []int{job.MaxPriority + 1, job.MinPriority - 1, int(beyondInt32)} {
				var fe *job.FieldError
				if _, err := e.s.Reschedule(e.ctx, store.RescheduleParams{Now: at(1), ID: j.ID, Priority: &p}); !errors.As(err, &fe) || fe.Field != "priority" {
					t.Errorf("Reschedule to priority %d: got %v, want a *job.FieldError on priority", p, err)
				}
			}
			e.unchanged("job", j)
			if g := e.reschedule(store.RescheduleParams{Now: at(1), ID: j.ID, Priority: intp(job.MinPriority)}); g.Priority != job.MinPriority {
				t.Errorf("Reschedule to priority %d: got %d", job.MinPriority, g.Priority)
			}
		}},
		{"AddScheduleBeyondBoundsIsRefused", func(t *testing.T, e *env) {
			for i, b := range []struct {
				field string
				set   func(*job.Schedule)
			}{
				{"max_attempts", func(sc *job.Schedule) { sc.MaxAttempts = job.MaxAttemptsLimit + 1 }},
				{"max_attempts", func(sc *job.Schedule) { sc.MaxAttempts = int(beyondInt32) }},
				{"max_attempts", func(sc *job.Schedule) { sc.MaxAttempts = -1 }},
				{"priority", func(sc *job.Schedule) { sc.Priority = job.MaxPriority + 1 }},
				{"priority", func(sc *job.Schedule) { sc.Priority = int(-beyondInt32) }},
			} {
				sc := newSchedule("s"+strconv.Itoa(i), at(60000))
				b.set(sc)
				var fe *job.FieldError
				if err := e.s.AddSchedule(e.ctx, store.AddScheduleParams{Schedule: sc}); !errors.As(err, &fe) || fe.Field != b.field {
					t.Errorf("AddSchedule(max attempts %d, priority %d): got %v, want a *job.FieldError on %s", sc.MaxAttempts, sc.Priority, err, b.field)
				}
			}
			if scs := e.listSchedules(); len(scs) != 0 {
				t.Errorf("after refused adds the store holds %d schedules, want none", len(scs))
			}
			// The explicit priority 0 (outside the range) is kept as it is.
			sc := newSchedule("zero", at(60000))
			sc.Priority = job.PriorityZero
			e.addSchedule(sc)
			if got := e.getSchedule("zero"); got.Priority != job.PriorityZero {
				t.Errorf("schedule with job.PriorityZero: read back priority %d", got.Priority)
			}
		}},
	}
}
