package cli

import (
	"testing"

	"github.com/hopperq/hopper/internal/statsview"
)

// TestQueueCommands: hopper queue pause holds a queue's jobs in the
// database (a client started afterwards runs the other queue's job only),
// queue list shows it paused with the job held, and queue resume lets it
// run.
func TestQueueCommands(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	held := hop(t, db, "enqueue", "--queue", "mail", "exec", "--", "true").id(t)
	other := hop(t, db, "enqueue", "--queue", "other", "exec", "--", "true").id(t)
	hop(t, db, "queue", "pause", "mail").ok(t).has(t, "queue mail paused")
	hop(t, db, "queue", "pause", "mail").ok(t).has(t, "queue mail already paused")
	hop(t, db, "queue", "list").ok(t).has(t, "QUEUE", "HELD", "mail", "paused since", "other", "active")
	var qs []statsview.Queue
	hop(t, db, "queue", "list", "--json").ok(t).decode(&qs)
	if len(qs) != 2 || qs[0].Name != "mail" || !qs[0].Paused || qs[0].Held != 1 || qs[0].PausedAt == nil ||
		qs[1].Name != "other" || qs[1].Paused || qs[1].Counts["available"] != 1 {
		t.Fatalf("queue list --json: %+v", qs)
	}
	work(t, db, other)
	if j := getJobJSON(t, db, held); j.State.String() != "available" {
		t.Fatalf("the paused queue's job is %s after a client ran, want available", j.State)
	}
	hop(t, db, "queue", "resume", "mail").ok(t).has(t, "queue mail resumed")
	hop(t, db, "queue", "resume", "mail").ok(t).has(t, "queue mail already active")
	work(t, db, held)
	hop(t, db, "queue", "pause", "").fails(t, ExitUsage, "bad queue NAME", "must not be empty")
	hop(t, db, "queue", "pause").fails(t, ExitUsage, "needs a queue NAME")
}
