package cli

import (
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/hopperq/hopper"
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
	hop(t, db, "jobs", "get", fmt.Sprint(held)).ok(t).has(t, "held:", "queue mail paused")
	if why := waitReason(t, db, held); why != "queue mail paused" {
		t.Errorf("jobs get --json: wait_reason %q, want %q", why, "queue mail paused")
	}
	hop(t, db, "queue", "resume", "mail").ok(t).has(t, "queue mail resumed")
	if why := waitReason(t, db, held); why != "" {
		t.Errorf("jobs get --json after the resume: wait_reason %q, want none", why)
	}
	if out := hop(t, db, "jobs", "get", fmt.Sprint(held)).ok(t).out; strings.Contains(out, "held:") {
		t.Errorf("jobs get after the resume says the job is held:\n%s", out)
	}
	hop(t, db, "queue", "resume", "mail").ok(t).has(t, "queue mail already active")
	work(t, db, held)
	hop(t, db, "queue", "pause", "").fails(t, ExitUsage, "bad queue NAME", "must not be empty")
	hop(t, db, "queue", "pause").fails(t, ExitUsage, "needs a queue NAME")
}

// TestQueueSetCommand: hopper queue set --concurrency caps a queue across
// the servers of the database: a client with 4 workers runs its jobs one
// at a time under a limit of 1 (none overlaps), and queue list shows the
// limit; --concurrency 0 removes it.
func TestQueueSetCommand(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	hop(t, db, "queue", "set", "one", "--concurrency", "1").ok(t).has(t, "at most 1 running at once")
	var ids []hopper.ID
	for range 4 {
		ids = append(ids, hop(t, db, "enqueue", "--queue", "one", "exec", "--", "sh", "-c", "sleep 0.05").id(t))
	}
	hop(t, db, "queue", "list").ok(t).has(t, "LIMIT", "0/1")
	jobs := work(t, db, ids...)
	for i := 1; i < len(jobs); i++ {
		for j := range i {
			a, b := jobs[i].Attempts[0], jobs[j].Attempts[0]
			if a.StartedAt.Before(b.StartedAt.Add(b.Duration)) && b.StartedAt.Before(a.StartedAt.Add(a.Duration)) {
				t.Errorf("jobs %d and %d of a queue limited to 1 overlapped", jobs[i].ID, jobs[j].ID)
			}
		}
	}
	var qs []statsview.Queue
	hop(t, db, "queue", "list", "--json").ok(t).decode(&qs)
	if len(qs) != 1 || qs[0].Concurrency != 1 || qs[0].Slots != 0 {
		t.Errorf("queue list --json: %+v, want concurrency 1 and no slot used", qs)
	}
	hop(t, db, "queue", "set", "one", "--concurrency", "0").ok(t).has(t, "no concurrency limit")
	hop(t, db, "queue", "set", "one", "--concurrency", "-2").fails(t, ExitUsage, "bad --concurrency -2")
	hop(t, db, "queue", "set", "one").fails(t, ExitUsage, "needs --concurrency")
}

// TestQueueKeyCommands: enqueue --key keeps the key (jobs get shows it);
// queue set --key-concurrency 1 runs a key's jobs one at a time (none
// overlaps) and queue list shows the limit; queue pause --key holds one
// key's jobs while the queue's other keys run, and resume --key lets them
// run.
func TestQueueKeyCommands(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	hop(t, db, "queue", "set", "api", "--key-concurrency", "1").ok(t).has(t, "at most 1 running at once of each key")
	var ids []hopper.ID
	for range 3 {
		ids = append(ids, hop(t, db, "enqueue", "--queue", "api", "--key", "tenant=1", "exec", "--", "sh", "-c", "sleep 0.05").id(t))
	}
	hop(t, db, "jobs", "get", fmt.Sprint(ids[0])).ok(t).has(t, "key", "tenant=1")
	hop(t, db, "queue", "list").ok(t).has(t, "PER KEY", "api")
	jobs := work(t, db, ids...)
	for i := 1; i < len(jobs); i++ {
		for j := range i {
			a, b := jobs[i].Attempts[0], jobs[j].Attempts[0]
			if a.StartedAt.Before(b.StartedAt.Add(b.Duration)) && b.StartedAt.Before(a.StartedAt.Add(a.Duration)) {
				t.Errorf("jobs %d and %d of a key limited to 1 overlapped", jobs[i].ID, jobs[j].ID)
			}
		}
	}
	var qs []statsview.Queue
	hop(t, db, "queue", "list", "--json").ok(t).decode(&qs)
	if len(qs) != 1 || qs[0].KeyConcurrency != 1 {
		t.Errorf("queue list --json: %+v, want key_concurrency 1", qs)
	}
	hop(t, db, "queue", "pause", "api", "--key", "tenant=2").ok(t).has(t, "queue api key tenant=2 paused")
	held := hop(t, db, "enqueue", "--queue", "api", "--key", "tenant=2", "exec", "--", "true").id(t)
	other := hop(t, db, "enqueue", "--queue", "api", "--key", "tenant=3", "exec", "--", "true").id(t)
	work(t, db, other)
	if j := getJobJSON(t, db, held); j.State.String() != "available" || j.Key != "tenant=2" {
		t.Fatalf("the paused key's job: %s key %q, want available with key tenant=2", j.State, j.Key)
	}
	hop(t, db, "queue", "list").ok(t).has(t, "KEY HELD")
	hop(t, db, "queue", "list", "--json").ok(t).decode(&qs)
	if len(qs) != 1 || qs[0].KeyHeld != 1 || qs[0].Held != 0 {
		t.Errorf("queue list --json with key tenant=2 paused: %+v, want its job held by its key", qs)
	}
	hop(t, db, "jobs", "get", fmt.Sprint(held)).ok(t).has(t, "held:", "key tenant=2 paused")
	if why := waitReason(t, db, held); why != "key tenant=2 paused" {
		t.Errorf("jobs get --json: wait_reason %q, want %q", why, "key tenant=2 paused")
	}
	hop(t, db, "queue", "resume", "api", "--key", "tenant=2").ok(t).has(t, "queue api key tenant=2 resumed")
	work(t, db, held)
	hop(t, db, "queue", "set", "api", "--key-concurrency", "0").ok(t).has(t, "no limit per key")
	hop(t, db, "queue", "set", "api", "--key-concurrency", "-1").fails(t, ExitUsage, "bad --key-concurrency -1")
	hop(t, db, "queue", "pause", "api", "--key", "").fails(t, ExitUsage, "bad --key")
	hop(t, db, "enqueue", "--key", "", "exec", "--", "true").fails(t, ExitUsage, "--key")
}

// TestQueueRateCommand: hopper queue set --rate throttles a queue: past
// its burst a job waits (queue list says until when); with --drop the
// excess is cancelled with the reason; --rate none removes the throttle;
// bad rates and a burst without a rate are usage errors.
func TestQueueRateCommand(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	hop(t, db, "queue", "set", "slow", "--rate", "1/1h").ok(t).has(t, "at most 1/1h starts across every server, 1 at once; the excess waits")
	first := hop(t, db, "enqueue", "--queue", "slow", "exec", "--", "true").id(t)
	second := hop(t, db, "enqueue", "--queue", "slow", "exec", "--", "true").id(t)
	work(t, db, first)
	if j := getJobJSON(t, db, second); j.State.String() != "available" {
		t.Fatalf("the throttled job is %s, want available", j.State)
	}
	hop(t, db, "queue", "list").ok(t).has(t, "RATE", "1/1h", "throttled until")
	hop(t, db, "jobs", "get", fmt.Sprint(second)).ok(t).has(t, "held:", "queue slow throttled until")
	var qs []statsview.Queue
	hop(t, db, "queue", "list", "--json").ok(t).decode(&qs)
	if len(qs) != 1 || qs[0].Rate != "1/1h" || qs[0].Throttled != 1 || qs[0].ThrottledUntil == nil {
		t.Fatalf("queue list --json: %+v, want slow at 1/1h with 1 throttled", qs)
	}
	hop(t, db, "queue", "set", "slow", "--rate", "none").ok(t).has(t, "queue slow: no rate limit")
	work(t, db, second)

	hop(t, db, "queue", "set", "d", "--rate", "1/1h", "--burst", "2", "--drop").ok(t).has(t, "2 at once; the excess is dropped")
	var ids []hopper.ID
	for range 3 {
		ids = append(ids, hop(t, db, "enqueue", "--queue", "d", "exec", "--", "true").id(t))
	}
	hop(t, db, "queue", "list").ok(t).has(t, "1/1h burst 2 drop")
	jobs := work(t, db, ids...)
	states := map[string]int{}
	for _, j := range jobs {
		states[j.State.String()]++
		if j.State == hopper.StateCancelled && j.LastError != "dropped: queue d over its rate 1/1h" {
			t.Errorf("dropped job %d: last error %q", j.ID, j.LastError)
		}
	}
	if states["completed"] != 2 || states["cancelled"] != 1 {
		t.Errorf("3 jobs in a queue at 1/1h burst 2 with --drop: %v, want 2 completed, 1 cancelled", states)
	}
	hop(t, db, "queue", "set", "d", "--rate", "fast").fails(t, ExitUsage, `bad --rate "fast"`)
	hop(t, db, "queue", "set", "d", "--rate", "1/1s", "--burst", "-1").fails(t, ExitUsage, "bad --burst")
	hop(t, db, "queue", "set", "d", "--burst", "3").fails(t, ExitUsage, "--burst and --drop go with --rate")
}

// TestQueueKeyRateCommand: hopper queue set --key-rate throttles each key
// of a queue: past a key's burst its job waits while
// another key's runs; queue list shows the rate per key; --key-rate none
// removes it; bad rates and a burst without a rate are usage errors that
// name the flag and change nothing.
func TestQueueKeyRateCommand(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	hop(t, db, "queue", "set", "api", "--key-rate", "1/1h").ok(t).
		has(t, "queue api: at most 1/1h starts of each key across every server, 1 at once; a key's excess waits")
	first := hop(t, db, "enqueue", "--queue", "api", "--key", "tenant=42", "exec", "--", "true").id(t)
	second := hop(t, db, "enqueue", "--queue", "api", "--key", "tenant=42", "exec", "--", "true").id(t)
	other := hop(t, db, "enqueue", "--queue", "api", "--key", "tenant=7", "exec", "--", "true").id(t)
	work(t, db, first, other)
	if j := getJobJSON(t, db, second); j.State.String() != "available" {
		t.Fatalf("the throttled key's job is %s, want available", j.State)
	}
	hop(t, db, "queue", "list").ok(t).has(t, "PER KEY", "1/1h")
	var qs []statsview.Queue
	hop(t, db, "queue", "list", "--json").ok(t).decode(&qs)
	if len(qs) != 1 || qs[0].KeyRate != "1/1h" || qs[0].KeyBurst != 1 || qs[0].Rate != "" {
		t.Fatalf("queue list --json: %+v, want api at 1/1h per key", qs)
	}
	hop(t, db, "queue", "set", "api", "--key-concurrency", "2", "--key-rate", "5/1s", "--key-burst", "3").ok(t)
	hop(t, db, "queue", "list").ok(t).has(t, "2, 5/1s burst 3")
	hop(t, db, "queue", "set", "api", "--key-rate", "fast").fails(t, ExitUsage, `bad --key-rate "fast"`)
	hop(t, db, "queue", "set", "api", "--key-rate", "1/0s").fails(t, ExitUsage, `bad --key-rate "1/0s"`)
	hop(t, db, "queue", "set", "api", "--key-rate", "1/1s", "--key-burst", "-1").fails(t, ExitUsage, "bad --key-burst")
	hop(t, db, "queue", "set", "api", "--concurrency", "1", "--key-rate", "1/1s", "--key-burst", "-1").fails(t, ExitUsage, "bad --key-burst")
	hop(t, db, "queue", "set", "api", "--key-burst", "3").fails(t, ExitUsage, "--key-burst and --key-drop go with --key-rate")
	hop(t, db, "queue", "list", "--json").ok(t).decode(&qs)
	if len(qs) != 1 || qs[0].KeyRate != "5/1s" || qs[0].KeyBurst != 3 || qs[0].Concurrency != 0 {
		t.Fatalf("queue list --json after refused input: %+v, want api at 5/1s burst 3 per key, no limit", qs)
	}
	hop(t, db, "queue", "set", "api", "--key-rate", "none").ok(t).has(t, "queue api: no rate limit per key")
	work(t, db, second)
}

// TestQueueKeyDropCommand: hopper queue set --key-rate --key-drop drops
// each key's excess with its reason while another key's job runs; queue
// list and its JSON show it; --key-rate without --key-drop holds the
// excess again; --key-drop without --key-rate is a usage error.
func TestQueueKeyDropCommand(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	hop(t, db, "queue", "set", "api", "--key-rate", "1/1h", "--key-drop").ok(t).
		has(t, "queue api: at most 1/1h starts of each key across every server, 1 at once; a key's excess is dropped")
	var ids []hopper.ID
	for _, key := range []string{"tenant=42", "tenant=42", "tenant=42", "tenant=7"} {
		ids = append(ids, hop(t, db, "enqueue", "--queue", "api", "--key", key, "exec", "--", "true").id(t))
	}
	hop(t, db, "queue", "list").ok(t).has(t, "PER KEY", "1/1h drop")
	var qs []statsview.Queue
	hop(t, db, "queue", "list", "--json").ok(t).decode(&qs)
	if len(qs) != 1 || qs[0].KeyRate != "1/1h" || !qs[0].KeyDrop || qs[0].Drop {
		t.Fatalf("queue list --json: %+v, want api at 1/1h per key, key_drop", qs)
	}
	states := map[string]int{}
	for _, j := range work(t, db, ids...) {
		states[j.Key+" "+j.State.String()]++
		if j.State == hopper.StateCancelled && j.LastError != "dropped: key tenant=42 of queue api over its rate 1/1h" {
			t.Errorf("dropped job %d: last error %q", j.ID, j.LastError)
		}
	}
	if want := map[string]int{"tenant=42 completed": 1, "tenant=42 cancelled": 2, "tenant=7 completed": 1}; !maps.Equal(states, want) {
		t.Errorf("jobs at 1/1h per key with --key-drop: %v, want %v", states, want)
	}
	hop(t, db, "queue", "set", "api", "--key-drop").fails(t, ExitUsage, "--key-burst and --key-drop go with --key-rate")
	var set map[string]any
	hop(t, db, "--json", "queue", "set", "api", "--key-rate", "1/1h").ok(t).decode(&set)
	if set["key_drop"] != false {
		t.Errorf("queue set --json without --key-drop: %v, want key_drop false", set)
	}
	hop(t, db, "queue", "list", "--json").ok(t).decode(&qs)
	if len(qs) != 1 || qs[0].KeyDrop {
		t.Fatalf("queue list --json after --key-rate without --key-drop: %+v, want the excess held", qs)
	}
	held := hop(t, db, "enqueue", "--queue", "api", "--key", "tenant=42", "exec", "--", "true").id(t)
	work(t, db, hop(t, db, "enqueue", "--queue", "api", "--key", "tenant=9", "exec", "--", "true").id(t))
	if j := getJobJSON(t, db, held); j.State.String() != "available" {
		t.Errorf("tenant=42's job with the excess held: %s, want available", j.State)
	}
}

// TestQueueKeyedDropCommand: hopper queue set --rate --drop on a keyed
// queue (--key-concurrency) drops the queue's excess over its keys with
// the queue's reason: the first key's job runs, the other keys' jobs are
// cancelled.
func TestQueueKeyedDropCommand(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	hop(t, db, "queue", "set", "api", "--key-concurrency", "1", "--rate", "1/1h", "--drop").ok(t).
		has(t, "queue api: at most 1 running at once of each key", "queue api: at most 1/1h starts across every server, 1 at once; the excess is dropped")
	var ids []hopper.ID
	for _, key := range []string{"tenant=42", "tenant=7", "tenant=9"} {
		ids = append(ids, hop(t, db, "enqueue", "--queue", "api", "--key", key, "exec", "--", "true").id(t))
	}
	var qs []statsview.Queue
	hop(t, db, "queue", "list", "--json").ok(t).decode(&qs)
	if len(qs) != 1 || qs[0].Rate != "1/1h" || !qs[0].Drop || qs[0].KeyConcurrency != 1 {
		t.Fatalf("queue list --json: %+v, want api at 1/1h dropping, 1 per key", qs)
	}
	states := map[string]int{}
	for _, j := range work(t, db, ids...) {
		states[j.Key+" "+j.State.String()]++
		if j.State == hopper.StateCancelled && j.LastError != "dropped: queue api over its rate 1/1h" {
			t.Errorf("dropped job %d: last error %q", j.ID, j.LastError)
		}
	}
	if want := map[string]int{"tenant=42 completed": 1, "tenant=7 cancelled": 1, "tenant=9 cancelled": 1}; !maps.Equal(states, want) {
		t.Errorf("jobs of a keyed queue at 1/1h with --drop: %v, want %v", states, want)
	}
}

// waitReason returns the wait_reason of job id in jobs get --json ("" if
// absent).
func waitReason(t *testing.T, db string, id hopper.ID) string {
	t.Helper()
	var v struct {
		WaitReason *string `json:"wait_reason"`
	}
	hop(t, db, "jobs", "get", "--json", fmt.Sprint(id)).ok(t).decode(&v)
	if v.WaitReason == nil {
		return ""
	}
	if *v.WaitReason == "" {
		t.Errorf("jobs get --json %d: wait_reason present and empty", id)
	}
	return *v.WaitReason
}
