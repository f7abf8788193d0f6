package storetest

import (
	"testing"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

func keylessCases() []testCase {
	return []testCase{
		{"KeylessJobBehindKeyedBacklog", func(t *testing.T, e *env) {
			// A keyed queue whose walk wraps around at every claim (a
			// hot key at its limit, its backlog waiting) and finds no
			// job without a key: a SQL store may remember that it has
			// none (decisions 105, 106). A keyless job that any write
			// makes available there — an enqueue, a finish back to
			// available, a promotion of a retrying or scheduled job, a
			// rescue, a retry of a dead job, a reschedule, a debounced
			// enqueue past its MaxWait — is claimed
			// at the next claim, however many claims found none before.
			e.keyControl()
			e.keyLimit(t0, "q", 1)
			e.keyed(t0, "q", "hot", 20)
			ms, leaseFor := 1, 10*time.Minute
			claim := func() []*job.Job {
				ms++
				return e.claim(store.ClaimParams{Now: at(ms), Limit: 5, Queues: []string{"q"}, LeaseUntil: at(ms).Add(leaseFor)}).Jobs
			}
			if got := claim(); len(got) != 1 || got[0].Key != "hot" {
				t.Fatalf("first claim: keys %q, want [hot]", keysOf(got))
			}
			none := func(what string) {
				t.Helper()
				for range 3 {
					if got := claim(); len(got) != 0 {
						t.Fatalf("%s: claim took jobs %v, want none", what, idsOf(got))
					}
				}
			}
			next := func(what string, id job.ID) *job.Job {
				t.Helper()
				got := claim()
				if len(got) != 1 || got[0].ID != id {
					t.Fatalf("after %s: the next claim took jobs %v, want the keyless job %d", what, idsOf(got), id)
				}
				return got[0]
			}
			none("no keyless job")
			id := e.add(at(ms), &job.Job{Kind: "k", Queue: "q"})
			j := next("its enqueue", id)

			none("the keyless job running")
			e.finishOne(at(ms), j, store.Outcome{State: job.StateAvailable})
			j = next("a finish back to available", id)

			e.finishOne(at(ms), j, store.Outcome{State: job.StateRetrying, RunAt: at(ms + 100), Error: "again"})
			none("the keyless job retrying")
			ms += 100
			j = next("its retry came due", id)

			e.finishOne(at(ms), j, store.Outcome{State: job.StateAvailable})
			leaseFor = time.Millisecond
			next("a finish back to available", id)
			leaseFor = 10 * time.Minute
			none("the keyless job running, its lease expired")
			if got := e.rescue(store.RescueParams{Now: at(ms), MaxCrashes: 100}); len(got) != 1 || got[0].State != job.StateAvailable {
				t.Fatalf("Rescue: %v, want the keyless job available", got)
			}
			j = next("its rescue", id)

			e.finishOne(at(ms), j, store.Outcome{State: job.StateDead, Error: "fatal"})
			none("the keyless job dead")
			e.retryDead(store.RetryDeadParams{Now: at(ms), IDs: []job.ID{id}}, 1)
			j = next("its retry from the dead", id)

			e.finishOne(at(ms), j, store.Outcome{State: job.StateScheduled, RunAt: at(ms + 3_600_000)})
			none("the keyless job snoozed")
			e.reschedule(store.RescheduleParams{Now: at(ms), ID: id, RunAt: at(ms)})
			next("its reschedule to now", id)

			later := e.add(at(ms), &job.Job{Kind: "k", Queue: "q", RunAt: at(ms + 50)})
			none("a keyless job scheduled")
			ms += 50
			next("it came due", later)

			debounced := func() *job.Job {
				return &job.Job{Kind: "k", Queue: "q", UniqueKey: "d", Debounce: job.Debounce{Period: 100 * time.Millisecond,
					MaxWait: 100 * time.Millisecond}}
			}
			held := e.add(at(ms), debounced())
			none("a keyless job debounced")
			ms += 200
			if r := e.enqueue(at(ms), debounced())[0]; !r.Debounced || r.ID != held || r.State != job.StateAvailable {
				t.Fatalf("debounced enqueue past the MaxWait: %+v, want job %d debounced, available", r, held)
			}
			next("a debounced enqueue past its MaxWait", held)
		}},
	}
}

// KeyedJob returns a job of kind "k" in queue with key (none if ""),
// validated at the suite's fixed now: for a backend's own tests of keyed
// queues.
func KeyedJob(t testing.TB, queue, key string) *job.Job {
	t.Helper()
	j := &job.Job{Kind: "k", Queue: queue, Key: key, MaxAttempts: 3}
	if err := j.Validate(t0); err != nil {
		t.Fatal(err)
	}
	return j
}

// ClaimKeys claims up to 5 jobs of queue through s at the suite's fixed
// now, with a lease of an hour, and returns their keys in the claim's
// order: for a backend's own tests of keyed queues.
func ClaimKeys(t testing.TB, s store.Store, queue string) []string {
	t.Helper()
	res, err := s.Claim(t.Context(), store.ClaimParams{Now: t0, Limit: 5, Worker: worker1, LeaseUntil: t0.Add(time.Hour),
		Queues: []string{queue}})
	if err != nil {
		t.Fatal(err)
	}
	return keysOf(res.Jobs)
}
