package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hopperq/hopper"
)

// TestJobsOutput: jobs output prints an attempt's stdout or stderr exactly
// as written, notes a truncation on stderr, and names what is missing;
// jobs get sums up each attempt's output.
func TestJobsOutput(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ok := hop(t, db, "enqueue", "exec", "--", "sh", "-c", `printf 'one\ntwo <b>\n'; echo warn >&2`).ok(t).id(t)
	big := hop(t, db, "enqueue", "exec", "--", "sh", "-c", `yes 0123456789abcde | head -n 98304`).ok(t).id(t)
	failed := hop(t, db, "enqueue", "--max-attempts", "1", "exec", "--", "sh", "-c", "echo partial; exit 3").ok(t).id(t)
	work(t, db, ok, big, failed)

	if got := hop(t, db, "jobs", "output", idArg(ok)).ok(t); got.out != "one\ntwo <b>\n" || got.err != "" {
		t.Errorf("jobs output: got %q (stderr %q), want the stdout as written", got.out, got.err)
	}
	if got := hop(t, db, "jobs", "output", idArg(ok), "--stream", "stderr", "--attempt", "1").ok(t).out; got != "warn\n" {
		t.Errorf("jobs output --stream stderr: got %q", got)
	}
	if got := hop(t, db, "jobs", "output", idArg(ok), "--stream", "log").ok(t).out; got != "" {
		t.Errorf("jobs output --stream log of an exec job: got %q, want nothing", got)
	}
	r := hop(t, db, "jobs", "output", idArg(big)).ok(t)
	if len(r.out) != hopper.DefaultOutputLimit || !strings.Contains(r.err, "524288 more bytes not kept") {
		t.Errorf("jobs output of a truncated stdout: got %d bytes, stderr %q", len(r.out), r.err)
	}
	if got := hop(t, db, "jobs", "output", idArg(failed)).ok(t).out; got != "partial\n" {
		t.Errorf("jobs output of a failed attempt: got %q", got)
	}
	var o hopper.Output
	hop(t, db, "jobs", "output", "--json", idArg(ok)).ok(t).decode(&o)
	if o.Attempt != 1 || string(o.Stderr.Data) != "warn\n" || !o.Succeeded {
		t.Errorf("jobs output --json: got %+v", o)
	}
	hop(t, db, "jobs", "output", idArg(ok), "--attempt", "2").fails(t, 1, "attempt 2 kept no output")
	hop(t, db, "jobs", "output", "99").fails(t, 1, "job 99 not found")
	hop(t, db, "jobs", "output", idArg(ok), "--stream", "stdin").fails(t, 1, `--stream "stdin"`)
	hop(t, db, "jobs", "get", idArg(big)).ok(t).has(t, "Output kept", "STDOUT", "1.5 MiB (1.0 MiB kept)")
	hop(t, db, "jobs", "get", idArg(ok)).ok(t).has(t, "Output kept", "12 B", "5 B")
	var j hopper.Job
	if err := json.Unmarshal([]byte(hop(t, db, "jobs", "get", "--json", idArg(ok)).ok(t).out), &j); err != nil {
		t.Errorf("jobs get --json: %v", err)
	}
}

// TestScheduleAddOutputRetention: schedule add's --keep-succeeded,
// --keep-failed and --keep-output-for set the schedule's retention of its
// runs' outputs.
func TestScheduleAddOutputRetention(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	hop(t, db, "schedule", "add", "nightly", "--every", "1h", "--keep-failed", "5", "--keep-succeeded", "-1",
		"--keep-output-for", "48h", "exec", "--", "true").ok(t)
	hop(t, db, "schedule", "add", "plain", "--every", "1h", "exec", "--", "true").ok(t)
	var scheds []*hopper.Schedule
	hop(t, db, "schedule", "list", "--json").ok(t).decode(&scheds)
	if len(scheds) != 2 {
		t.Fatalf("schedules: got %d", len(scheds))
	}
	want := hopper.OutputRetention{Succeeded: -1, Failed: 5, MaxAge: 48 * time.Hour}
	if got := scheds[0].OutputRetention; got != want {
		t.Errorf("nightly: got %+v, want %+v", got, want)
	}
	if got := scheds[1].OutputRetention; got != (hopper.OutputRetention{}) {
		t.Errorf("plain: got %+v, want the defaults", got)
	}
	hop(t, db, "schedule", "add", "bad", "--every", "1h", "--keep-output-for", "-1h", "exec", "--", "true").fails(t, 2, "max_age")
}
