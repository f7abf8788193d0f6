package cli

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hopperq/hopper"
)

func TestDLQ(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	a := hop(t, db, "enqueue", "--max-attempts", "2", "--retry-backoff", "fixed:10ms", "exec", "--", "sh", "-c", "echo broken >&2; exit 3").ok(t).id(t)
	b := hop(t, db, "enqueue", "exec", "--permanent-exit-codes", "64", "--", "sh", "-c", "exit 64").ok(t).id(t)
	c := hop(t, db, "enqueue", "exec", "--", "true").ok(t).id(t)
	for _, j := range work(t, db, a, b, c) {
		if want := map[hopper.ID]hopper.State{a: hopper.StateDead, b: hopper.StateDead, c: hopper.StateCompleted}[j.ID]; j.State != want {
			t.Fatalf("job %d: %s, want %s", j.ID, j.State, want)
		}
	}
	hop(t, db, "dlq", "list").ok(t).has(t, "ID", "LAST ERROR", "exit code 3: broken", "2/2", "exit code 64")
	var dead []*hopper.Job
	hop(t, db, "dlq", "list", "--json").ok(t).decode(&dead)
	if len(dead) != 2 || dead[0].ID != a || len(dead[0].Attempts) != 2 || dead[1].ID != b {
		t.Fatalf("dlq list --json: %+v", dead)
	}
	hop(t, db, "jobs", "get", idArg(a)).ok(t).has(t, "dead", "Attempts:", "retrying", "Last error:", "broken")

	// Retry one: back to waiting, attempts reset, history kept.
	hop(t, db, "dlq", "retry", idArg(a)).ok(t).has(t, "job "+idArg(a)+" back to waiting (available)")
	j := getJobJSON(t, db, a)
	if j.State != hopper.StateAvailable || j.Attempt != 0 || len(j.Attempts) != 2 {
		t.Fatalf("retried job: %s attempt %d history %d", j.State, j.Attempt, len(j.Attempts))
	}
	hop(t, db, "dlq", "retry", idArg(c), "77").fails(t, 1, "job "+idArg(c)+" is not dead: it is completed", "job 77 not found", "2 of 2 jobs not retried")
	if j := work(t, db, a)[0]; j.State != hopper.StateDead || len(j.Attempts) != 4 {
		t.Fatalf("job %d after retry: %s, %d attempts", a, j.State, len(j.Attempts))
	}
	hop(t, db, "dlq", "retry").fails(t, 2, "give job IDs or --all (exactly one)")
	hop(t, db, "dlq", "retry", "--all", "1").fails(t, 2, "give job IDs or --all (exactly one)")
	hop(t, db, "dlq", "retry", "x").fails(t, 2, `bad job ID "x"`)

	// Purge.
	hop(t, db, "dlq", "purge", "--older-than", "1h").ok(t).has(t, "0 dead jobs purged")
	hop(t, db, "dlq", "purge", idArg(b)).ok(t).has(t, "job "+idArg(b)+" purged")
	hop(t, db, "jobs", "get", idArg(b)).fails(t, 1, "not found")
	hop(t, db, "dlq", "purge", "--older-than", "1h", "3").fails(t, 2, "exactly one")
	hop(t, db, "dlq", "retry", "--all").ok(t).has(t, "1 job back to waiting")
	work(t, db, a)
	// No IDs never means everything: a usage error, and nothing is purged.
	hop(t, db, "dlq", "purge").fails(t, 2, "give job IDs, --older-than D or --all")
	hop(t, db, "dlq", "purge", "--older-than", "0s").fails(t, 2, "--older-than", "must be positive")
	hop(t, db, "dlq", "list", "--json").ok(t).decode(&dead)
	if len(dead) != 1 {
		t.Fatalf("a purge without IDs changed the dead-letter queue: %d dead jobs, want 1", len(dead))
	}
	hop(t, db, "dlq", "purge", "--all").ok(t).has(t, "1 dead job purged")
	hop(t, db, "dlq", "list", "--json").ok(t).decode(&dead)
	if len(dead) != 0 {
		t.Fatalf("after purge: %+v", dead)
	}
}

func TestSchedules(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	hop(t, db, "schedule", "add", "tick", "--every", "2s", "--max-attempts", "1", "exec", "--", "echo", "tick").ok(t).
		has(t, "schedule tick added", "every 2s", "next run")
	hop(t, db, "schedule", "add", "tick", "--every", "2s", "exec", "--", "echo", "tick").fails(t, 1, `schedule "tick" already exists`, "--replace")
	hop(t, db, "schedule", "add", "tick", "--every", "5s", "--replace", "exec", "--", "echo", "tock").ok(t)
	hop(t, db, "schedule", "add", "--cron", "0 3 * * *", "nightly", "--tz", "Europe/Paris", "--queue", "ops", "--priority", "4",
		"--retry-backoff", "fixed:1m", "--overlap", "allow", "http", "--url", "https://example.com/backup", "--method", "POST").ok(t)
	hop(t, db, "--json", "schedule", "add", "slow", "--every", "1m", "--fixed-delay", "exec", "--env", "A=1", "--", "sleep", "1").ok(t)

	hop(t, db, "schedule", "list").ok(t).has(t, "NAME", "NEXT RUN", "OVERLAP", "allow", "skip", "tick", "every 5s", "echo tock", "nightly", "0 3 * * * (Europe/Paris)",
		"POST https://example.com/backup", "slow", "every 1m0s after each run", "active")
	var scheds []*hopper.Schedule
	hop(t, db, "schedule", "list", "--json").ok(t).decode(&scheds)
	if len(scheds) != 3 {
		t.Fatalf("%d schedules", len(scheds))
	}
	n := scheds[0]
	if n.Name != "nightly" || n.Queue != "ops" || n.Priority != 4 || n.Overlap != hopper.OverlapAllow || n.Retry == nil || n.Retry.Base != time.Minute {
		t.Fatalf("nightly: %+v", n)
	}
	if next := n.NextRunAt.In(mustZone(t, "Europe/Paris")); next.Hour() != 3 || next.Minute() != 0 || !next.After(time.Now()) {
		t.Fatalf("nightly next run %s", next)
	}
	if !scheds[1].FixedDelay || scheds[2].Spec != "@every 5s" {
		t.Fatalf("slow/tick: %+v %+v", scheds[1], scheds[2])
	}

	hop(t, db, "schedule", "pause", "tick").ok(t).has(t, "schedule tick paused")
	hop(t, db, "schedule", "pause", "tick").ok(t).has(t, "schedule tick already paused")
	hop(t, db, "schedule", "list").ok(t).has(t, "paused")
	hop(t, db, "schedule", "list", "--json").ok(t).decode(&scheds)
	if !scheds[2].Paused {
		t.Fatal("tick not paused")
	}
	hop(t, db, "schedule", "resume", "tick").ok(t).has(t, "schedule tick resumed")
	hop(t, db, "schedule", "resume", "tick").ok(t).has(t, "schedule tick already active")
	hop(t, db, "schedule", "list", "--json").ok(t).decode(&scheds)
	if scheds[2].Paused {
		t.Fatal("tick still paused")
	}
	hop(t, db, "schedule", "rm", "tick").ok(t).has(t, "schedule tick removed")
	hop(t, db, "schedule", "rm", "tick").fails(t, 1, `schedule "tick" not found`, "nightly, slow")
	hop(t, db, "schedule", "pause", "nope").fails(t, 1, `schedule "nope" not found`)
	hop(t, db, "schedule", "resume").fails(t, 2, "needs a schedule NAME")

	// Usage errors.
	hop(t, db, "schedule", "add", "x", "exec", "--", "true").fails(t, 2, "--cron EXPR or --every D")
	hop(t, db, "schedule", "add", "x", "--every", "1s", "--cron", "* * * * *", "exec", "--", "true").fails(t, 2, "not both")
	hop(t, db, "schedule", "add", "x", "--cron", "61 * * * *", "exec", "--", "true").fails(t, 2, "bad --cron", "61")
	hop(t, db, "schedule", "add", "x", "--cron", "* * * * *", "--tz", "Mars/Olympus", "exec", "--", "true").fails(t, 2, "bad --tz", "Mars/Olympus")
	hop(t, db, "schedule", "add", "x", "--every", "100ms", "exec", "--", "true").fails(t, 2, "at least 1s")
	// A zone twice (the expression's own and --tz) is refused, as --tz with an interval.
	hop(t, db, "schedule", "add", "x", "--cron", "TZ=Europe/Paris 0 9 * * *", "--tz", "America/New_York", "exec", "--", "true").fails(t, 2, "bad --tz America/New_York", "differs from the zone the cron expression names, Europe/Paris")
	hop(t, db, "schedule", "add", "x", "--cron", "@every 1h", "--tz", "America/New_York", "exec", "--", "true").fails(t, 2, "bad --tz America/New_York", "applies to cron, not to every")
	hop(t, db, "schedule", "add", "x", "--every", "1h", "--tz", "America/New_York", "exec", "--", "true").fails(t, 2, "bad --tz America/New_York", "applies to cron, not to every")
	hop(t, db, "schedule", "add", "x", "--every", "0s", "exec", "--", "true").fails(t, 2, "bad --every 0s", "must be positive")
	hop(t, db, "schedule", "add", "x", "--every", "1m", "--timeout", "-1s", "exec", "--", "true").fails(t, 2, "--timeout", "must not be negative")
	hop(t, db, "schedule", "add", "x", "--every", "1m", "--max-attempts", "0", "exec", "--", "true").fails(t, 2, "--max-attempts", "must be positive")
	hop(t, db, "schedule", "add", "x", "--every", "1m").fails(t, 2, "needs a NAME and a job kind")
	hop(t, db, "schedule", "add", "x", "--every", "1m", "ftp").fails(t, 2, `unknown job kind "ftp"`)
	hop(t, db, "schedule", "add", "--every", "1m", "exec", "--", "true").fails(t, 2, `unknown job kind "true"`, `"exec" was taken as the schedule's NAME`)
	hop(t, db, "schedule", "add", "x", "--every", "1m", "--overlap", "maybe", "exec", "true").fails(t, 2, "--overlap", "skip (the default), allow, cancel, terminate, buffer-one or buffer-all")
	hop(t, db, "schedule", "add", "x", "--every", "1m", "--fixed-delay", "--overlap", "cancel", "exec", "true").fails(t, 2, "--overlap", "fixed-delay")
	hop(t, db, "schedule", "add", "x", "--every", "1m", "--bogus", "exec", "true").fails(t, 2, "unknown flag: --bogus")
	hop(t, db, "schedule", "add", "x", "--every", "1m", "exec", "--bogus", "true").fails(t, 2, "exec: unknown flag: --bogus")
	hop(t, db, "schedule", "add", "x", "--every", "1m", "http").fails(t, 2, "--url")
	hop(t, db, "schedule", "add", "--help").ok(t).has(t, "Usage:", "--cron", "--every", "--replace")
	hop(t, db, "schedule", "add", "x", "--every", "1m", "exec", "--help").ok(t).has(t, "--permanent-exit-codes")
	hop(t, db, "schedule", "list", "--json").ok(t).decode(&scheds)
	if len(scheds) != 2 {
		t.Fatalf("a failed add left a schedule: %d", len(scheds))
	}
}

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Skipf("no zone data: %v", err)
	}
	return loc
}

func TestScheduleRun(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	hop(t, db, "schedule", "add", "nightly", "--cron", "0 3 * * *", "--queue", "ops", "--max-attempts", "4", "exec", "--", "echo", "hi").ok(t)
	hop(t, db, "schedule", "pause", "nightly").ok(t)
	var j hopper.Job
	hop(t, db, "--json", "schedule", "run", "nightly").ok(t).decode(&j)
	if !j.Manual() || j.Schedule != "nightly" || j.Queue != "ops" || j.MaxAttempts != 4 || j.Kind != "exec" || j.State != hopper.StateAvailable {
		t.Fatalf("run now: %+v", j)
	}
	hop(t, db, "jobs", "get", fmt.Sprint(j.ID)).ok(t).has(t, "nightly (manual run, not a tick)")
	hop(t, db, "schedule", "run", "nightly").fails(t, 1, `schedule "nightly" not run`, fmt.Sprintf("previous job %d is available", j.ID), "--force")
	hop(t, db, "schedule", "run", "--force", "nightly").ok(t).has(t, fmt.Sprint(j.ID+1))
	hop(t, db, "schedule", "run", "nope").fails(t, 1, `schedule "nope" not found`, "nightly")
	// Overlap cancel: a run cancels the waiting previous one.
	hop(t, db, "schedule", "add", "latest", "--every", "1h", "--overlap", "cancel", "exec", "--", "true").ok(t).has(t, "overlap cancel")
	var c1, c2 hopper.Job
	hop(t, db, "--json", "schedule", "run", "latest").ok(t).decode(&c1)
	hop(t, db, "--json", "schedule", "run", "latest").ok(t).decode(&c2)
	hop(t, db, "jobs", "get", fmt.Sprint(c1.ID)).ok(t).has(t, "cancelled")
	hop(t, db, "jobs", "get", fmt.Sprint(c2.ID)).ok(t).has(t, "available")
	hop(t, db, "schedule", "run").fails(t, 2, "needs a schedule NAME")
	var sc hopper.Schedule
	hop(t, db, "--json", "jobs", "count").ok(t).has(t, "4")
	var scheds []*hopper.Schedule
	hop(t, db, "schedule", "list", "--json").ok(t).decode(&scheds)
	if sc = *scheds[1]; !sc.Paused || !sc.LastFireAt.IsZero() || sc.LastJobID != j.ID+1 {
		t.Fatalf("schedule after runs now: %+v", sc)
	}
}

// TestScheduleRunBuffered: with --overlap buffer-one a run now while the
// previous job waits is buffered (exit 0, "buffered"), listed in the
// schedule's status, and the next one is refused: the buffer is full.
func TestScheduleRunBuffered(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	hop(t, db, "schedule", "add", "b", "--every", "1h", "--overlap", "buffer-one", "exec", "--", "true").ok(t).has(t, "overlap buffer-one")
	var j hopper.Job
	hop(t, db, "--json", "schedule", "run", "b").ok(t).decode(&j)
	hop(t, db, "schedule", "run", "b").ok(t).has(t, "buffered", fmt.Sprintf("previous job %d", j.ID))
	hop(t, db, "schedule", "list").ok(t).has(t, "1 buffered")
	hop(t, db, "schedule", "run", "b").fails(t, 1, `schedule "b" not run`, "overlap policy is buffer-one")
	hop(t, db, "schedule", "add", "t", "--every", "1h", "--overlap", "terminate", "exec", "--", "true").ok(t).has(t, "overlap terminate")
	hop(t, db, "schedule", "add", "x", "--every", "1h", "--fixed-delay", "--overlap", "buffer-all", "exec", "--", "true").fails(t, 2, "overlap", "fixed-delay")
}

func TestScheduleNext(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	hop(t, db, "schedule", "add", "nightly", "--cron", "30 2 * * *", "--tz", "Australia/Lord_Howe", "exec", "--", "true").ok(t)
	out := hop(t, db, "schedule", "next", "nightly", "-n", "400").ok(t)
	lines := strings.Split(strings.TrimSpace(out.out), "\n")
	if len(lines) != 400 {
		t.Fatalf("%d lines, want 400", len(lines))
	}
	// Within a year both of Lord Howe's offsets show, half an hour apart.
	joined := strings.Join(lines, "\n")
	if !strings.Contains(joined, "(+10:30)") || !strings.Contains(joined, "(+11:00)") || !strings.Contains(lines[0], "02:30:00") {
		t.Errorf("fire times:\n%s", strings.Join(lines[:3], "\n"))
	}
	var res struct {
		Schedule string      `json:"schedule"`
		TimeZone string      `json:"time_zone"`
		NextRuns []time.Time `json:"next_runs"`
	}
	hop(t, db, "--json", "schedule", "next", "nightly").ok(t).decode(&res)
	if res.Schedule != "nightly" || res.TimeZone != "Australia/Lord_Howe" || len(res.NextRuns) != 5 || !res.NextRuns[1].After(res.NextRuns[0]) {
		t.Errorf("--json: %+v", res)
	}
	hop(t, db, "schedule", "pause", "nightly").ok(t)
	hop(t, db, "schedule", "next", "nightly", "-n", "1").ok(t).has(t, "02:30:00")
	hop(t, db, "schedule", "next", "nightly", "-n", "0").fails(t, 2, "bad -n 0", "1 to 1000")
	hop(t, db, "schedule", "next", "nightly", "-n", "1001").fails(t, 2, "bad -n 1001")
	hop(t, db, "schedule", "next", "nope").fails(t, 1, `schedule "nope" not found`)
}

func TestScheduleCatchUpFlags(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	hop(t, db, "schedule", "add", "all", "--every", "1m", "--catch-up", "all", "--catch-up-window", "3h", "--catch-up-max", "500", "exec", "--", "true").ok(t)
	hop(t, db, "schedule", "add", "none", "--every", "1m", "--catch-up", "none", "exec", "--", "true").ok(t)
	var scheds []*hopper.Schedule
	hop(t, db, "schedule", "list", "--json").ok(t).decode(&scheds)
	if len(scheds) != 2 || scheds[0].CatchUp != hopper.CatchUpAll || scheds[0].CatchUpWindow != 3*time.Hour || scheds[0].CatchUpMax != 500 || scheds[1].CatchUp != hopper.CatchUpNone {
		t.Fatalf("schedules: %+v %+v", scheds[0], scheds[1])
	}
	hop(t, db, "schedule", "add", "x", "--every", "1m", "--catch-up", "some", "exec", "true").fails(t, 2, "--catch-up", "one (the default), none, latest or all")
	hop(t, db, "schedule", "add", "x", "--every", "1m", "--catch-up", "all", "--catch-up-max", "10001", "exec", "true").fails(t, 2, "--catch-up-max", "10000")
	hop(t, db, "schedule", "add", "x", "--every", "1m", "--catch-up", "all", "--catch-up-window", "200h", "exec", "true").fails(t, 2, "--catch-up-window")
	hop(t, db, "schedule", "add", "x", "--every", "1m", "--catch-up-max", "5", "exec", "true").fails(t, 2, "--catch-up-max", "catch_up all only")
	// Jitter.
	hop(t, db, "schedule", "add", "j", "--every", "1h", "--jitter", "10m", "--jitter-mode", "stable", "exec", "true").ok(t)
	hop(t, db, "schedule", "list", "--json").ok(t).decode(&scheds)
	if j := scheds[1]; j.Name != "j" || j.Jitter != 10*time.Minute || j.JitterMode != hopper.JitterStable {
		t.Fatalf("jittered schedule: %+v", j)
	}
	hop(t, db, "schedule", "add", "x", "--every", "1m", "--jitter", "25h", "exec", "true").fails(t, 2, "--jitter", "24h")
	hop(t, db, "schedule", "add", "x", "--every", "1m", "--jitter", "1m", "--jitter-mode", "fixed", "exec", "true").fails(t, 2, "--jitter-mode", "random (the default) or stable")
}

// TestScheduleBackfill: schedule backfill enqueues the past ticks of a
// range once; a repeat finds them; a bad range is a usage error naming the
// flag.
func TestScheduleBackfill(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	hop(t, db, "schedule", "add", "hourly", "--cron", "0 * * * *", "--overlap", "allow", "exec", "--", "true").ok(t)
	hop(t, db, "schedule", "backfill", "hourly", "--from", "2020-01-01T00:00:00Z", "--to", "2020-01-01T03:30:00Z").ok(t).
		has(t, "4 ticks, 4 fired, 0 existed")
	var res hopper.BackfillResult
	hop(t, db, "--json", "schedule", "backfill", "hourly", "--from", "2020-01-01T00:00:00Z", "--to", "2020-01-01T03:30:00Z").ok(t).decode(&res)
	if res.Ticks != 4 || res.Existed != 4 || len(res.Fired) != 0 {
		t.Errorf("repeated backfill: %+v, want the 4 ticks existing", res)
	}
	hop(t, db, "--json", "jobs", "count").ok(t).has(t, "4")
	hop(t, db, "schedule", "backfill", "hourly", "--from", "2020-01-02T00:00:00Z", "--to", "2020-01-01T00:00:00Z").fails(t, 2, "--from")
	hop(t, db, "schedule", "backfill", "hourly", "--to", "2020-01-01T00:00:00Z").fails(t, 2, "--from", "missing")
	hop(t, db, "schedule", "backfill", "hourly", "--from", "2020-01-01T00:00:00Z", "--to", "2199-01-01T00:00:00Z").fails(t, 2, "--to", "future")
	hop(t, db, "schedule", "backfill", "nope", "--from", "2020-01-01T00:00:00Z", "--to", "2020-01-01T03:30:00Z").fails(t, 1, `schedule "nope" not found`)
}
