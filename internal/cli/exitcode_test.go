package cli

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/hopperq/hopper"
)

// TestExitCodes checks the one rule of exit codes, command by command:
// 0 when every target ended in the state asked for (or already was in it),
// 1 when the command failed for at least one target (not found, or in a
// state where the action does not apply) — having acted on the others —
// 2 for a usage error, with nothing changed.
func TestExitCodes(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ctx := context.Background()
	waiting := func() string { return idArg(hop(t, db, "enqueue", "--delay", "1h", "exec", "--", "true").ok(t).id(t)) }
	dead := func() hopper.ID {
		return hop(t, db, "enqueue", "--max-attempts", "1", "exec", "--", "sh", "-c", "exit 3").ok(t).id(t)
	}
	w := waiting()
	cancelled := waiting()
	hop(t, db, "jobs", "cancel", cancelled).ok(t)
	completedID := hop(t, db, "enqueue", "exec", "--", "true").ok(t).id(t)
	d1, d2, d3 := dead(), dead(), dead()
	work(t, db, completedID, d1, d2, d3)
	completed, deadJob := idArg(completedID), idArg(d1)

	// A running job: a client of this test runs a job that blocks until
	// the test ends, whatever cancel reaches it (a cancel reaches it at
	// once: it stays running with its cancel requested).
	ws := hopper.NewWorkers()
	started, release := make(chan struct{}), make(chan struct{})
	hopper.RegisterRaw(ws, "block", func(ctx context.Context, _ json.RawMessage) (any, error) {
		close(started)
		<-release
		return nil, ctx.Err()
	}, nil)
	c, err := hopper.Open(ctx, "sqlite:"+db, hopper.Config{Workers: ws, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Enqueue(ctx, "block", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	stopped, stop := context.WithCancel(ctx)
	stop()
	defer c.Stop(stopped) // at once, once the handler returned
	defer close(release)
	<-started
	running := idArg(res.ID)

	hop(t, db, "schedule", "add", "s", "--every", "1h", "exec", "--", "true").ok(t)
	state := func(id string) hopper.State { return getJobJSON(t, db, hopper.ID(atoi(t, id))).State }

	for _, tc := range []struct {
		args []string
		code int
		want string // in stdout for 0, in stderr otherwise
	}{
		{[]string{"jobs", "get", w}, 0, "Job " + w},
		{[]string{"jobs", "get", "999"}, 1, "job 999 not found"},
		{[]string{"jobs", "get", "abc"}, 2, `bad job ID "abc"`},

		{[]string{"jobs", "cancel", cancelled}, 0, "already cancelled"},
		{[]string{"jobs", "cancel", running}, 0, "cancellation requested"},
		{[]string{"jobs", "cancel", completed}, 1, "not cancelled: it already completed"},
		{[]string{"jobs", "cancel", deadJob}, 1, "not cancelled: it already died"},
		{[]string{"jobs", "cancel", "999"}, 1, "job 999 not found"},
		{[]string{"jobs", "cancel", "0"}, 2, "bad job ID"},

		{[]string{"jobs", "reschedule", w, "--delay", "2h"}, 0, "rescheduled"},
		{[]string{"jobs", "reschedule", running, "--delay", "2h"}, 1, "cannot be rescheduled: it is running"},
		{[]string{"jobs", "reschedule", completed, "--delay", "2h"}, 1, "cannot be rescheduled: it is completed"},
		{[]string{"jobs", "reschedule", "999", "--delay", "2h"}, 1, "job 999 not found"},
		{[]string{"jobs", "reschedule", w}, 2, "give --at, --delay or --priority"},

		{[]string{"dlq", "retry", completed}, 1, "is not dead: it is completed"},
		{[]string{"dlq", "retry", "999"}, 1, "job 999 not found"},
		{[]string{"dlq", "retry"}, 2, "give job IDs or --all"},
		{[]string{"dlq", "purge", w}, 1, "is not dead: it is scheduled"},
		{[]string{"dlq", "purge", "999"}, 1, "job 999 not found"},
		{[]string{"dlq", "purge", idArg(d3)}, 0, "job " + idArg(d3) + " purged"},
		{[]string{"dlq", "purge"}, 2, "give job IDs, --older-than D or --all"},
		{[]string{"dlq", "purge", "--older-than", "1h"}, 0, "0 dead jobs purged"},

		{[]string{"schedule", "pause", "s"}, 0, "schedule s paused"},
		{[]string{"schedule", "pause", "s"}, 0, "schedule s already paused"},
		{[]string{"schedule", "resume", "s"}, 0, "schedule s resumed"},
		{[]string{"schedule", "resume", "s"}, 0, "schedule s already active"},
		{[]string{"schedule", "pause", "nope"}, 1, `schedule "nope" not found`},
		{[]string{"schedule", "resume", "nope"}, 1, `schedule "nope" not found`},
		{[]string{"schedule", "rm", "nope"}, 1, `schedule "nope" not found`},
		{[]string{"schedule", "add", "s", "--every", "1h", "exec", "true"}, 1, "already exists"},
		{[]string{"schedule", "add", "t", "--every", "1h", "--overlap", "never", "exec", "true"}, 2, "--overlap"},

		{[]string{"enqueue", "--unique", "k", "exec", "true"}, 0, ""},
		{[]string{"enqueue", "--unique", "k", "exec", "true"}, 0, ""}, // the holder's ID: the job exists
		{[]string{"enqueue", "--bogus", "exec", "true"}, 2, "unknown flag: --bogus"},

		{[]string{"jobs", "list", "--state", "dead"}, 0, ""},
		{[]string{"jobs", "count", "--kind", "nothing"}, 0, "0"},
		{[]string{"dlq", "list"}, 0, ""},
		{[]string{"schedule", "list"}, 0, "s"},
		{[]string{"stats"}, 0, "QUEUE"},
		{[]string{"migrate"}, 0, "up to date"},
	} {
		r := hop(t, db, tc.args...)
		if tc.code == 0 {
			r.ok(t).has(t, tc.want)
		} else {
			r.fails(t, tc.code, tc.want)
		}
	}

	// Several targets: every one is acted on and reported; exit 1 if one failed.
	w2 := waiting()
	r := hop(t, db, "jobs", "cancel", w2, "999", cancelled)
	r.fails(t, 1, "job 999 not found", "1 of 3 jobs not cancelled")
	r.has(t, "job "+w2+" cancelled", "job "+cancelled+" already cancelled")
	if s := state(w2); s != hopper.StateCancelled {
		t.Errorf("job %s: %s, want cancelled although another ID failed", w2, s)
	}
	var sum targets
	r = hop(t, db, "jobs", "cancel", "--json", waiting(), "998")
	r.decode(&sum)
	if r.code != 1 || sum.Done != 1 || sum.Failed != 1 || sum.Jobs[1].Error != "not found" {
		t.Errorf("cancel --json: exit %d, %+v", r.code, sum)
	}
	hop(t, db, "dlq", "retry", idArg(d2), "999").fails(t, 1, "job 999 not found")
	if s := state(idArg(d2)); !s.Waiting() {
		t.Errorf("job %d: %s, want waiting although another ID failed", d2, s)
	}
	// A usage error changes nothing, even for the valid IDs before it.
	w3 := waiting()
	hop(t, db, "jobs", "cancel", w3, "abc").fails(t, 2, `bad job ID "abc"`)
	hop(t, db, "dlq", "purge", deadJob, "abc").fails(t, 2, `bad job ID "abc"`)
	if s := state(w3); s != hopper.StateScheduled {
		t.Errorf("job %s: %s after a usage error", w3, s)
	}
	if s := state(deadJob); s != hopper.StateDead {
		t.Errorf("job %s: %s after a usage error", deadJob, s)
	}
	hop(t, db, "dlq", "retry", "--all").ok(t).has(t, "1 job back to waiting")
	hop(t, db, "dlq", "purge", "--all").ok(t).has(t, "0 dead jobs purged")
	hop(t, db, "schedule", "rm", "s").ok(t).has(t, "schedule s removed")
}

func atoi(t *testing.T, s string) int64 {
	t.Helper()
	var n int64
	if err := json.Unmarshal([]byte(s), &n); err != nil {
		t.Fatal(err)
	}
	return n
}
