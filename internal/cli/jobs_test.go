package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/backoff"
	"github.com/hopperq/hopper/kinds"
)

func TestEnqueueListGetCancel(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	id1 := hop(t, db, "enqueue", "exec", "--", "echo", "hello world").ok(t).id(t)
	id2 := hop(t, db, "enqueue", "--delay", "1h", "--priority", "2", "exec", "--", "sh", "-c", "exit 1").ok(t).id(t)
	if id1 != 1 || id2 != 2 {
		t.Fatalf("ids %d %d", id1, id2)
	}
	hop(t, db, "jobs", "list").ok(t).has(t, "ID", "STATE", "available", "scheduled", "echo 'hello world'", "sh -c 'exit 1'")

	var jobs []*hopper.Job
	hop(t, db, "jobs", "list", "--json").ok(t).decode(&jobs)
	if len(jobs) != 2 || jobs[0].ID != 1 || jobs[1].State != hopper.StateScheduled || jobs[1].Priority != 2 {
		t.Fatalf("list --json: %+v", jobs)
	}
	hop(t, db, "jobs", "list", "--json", "--state", "waiting", "--desc", "--limit", "1").ok(t).decode(&jobs)
	if len(jobs) != 1 || jobs[0].ID != 2 {
		t.Fatalf("list --desc --limit 1: %+v", jobs)
	}
	hop(t, db, "jobs", "list", "--json", "--kind", "http").ok(t).decode(&jobs)
	if len(jobs) != 0 {
		t.Fatalf("list --kind http: %+v", jobs)
	}
	for args, want := range map[string]string{
		"": "2\n", "--state scheduled": "1\n", "--kind exec --state waiting": "2\n", "--kind http": "0\n",
	} {
		if got := hop(t, db, append([]string{"jobs", "count"}, strings.Fields(args)...)...).ok(t).out; got != want {
			t.Errorf("jobs count %s: got %q, want %q", args, got, want)
		}
	}
	hop(t, db, "jobs", "count", "--state", "nope").fails(t, 2, "unknown state")

	hop(t, db, "jobs", "get", "1").ok(t).has(t, "Job 1", "kind:", "exec", "state:", "available", `"hello world"`, "attempt:", "0 of 25")
	j := getJobJSON(t, db, 1)
	var a kinds.ExecArgs
	if err := json.Unmarshal(j.Args, &a); err != nil || a.Command != "echo" || len(a.Args) != 1 || a.Args[0] != "hello world" {
		t.Fatalf("args %s (%v)", j.Args, err)
	}

	hop(t, db, "jobs", "cancel", "2").ok(t).has(t, "job 2 cancelled")
	hop(t, db, "jobs", "cancel", "2").ok(t).has(t, "job 2 already cancelled")
	var c targets
	hop(t, db, "jobs", "cancel", "--json", "2").ok(t).decode(&c)
	if c.Done != 1 || c.Failed != 0 || len(c.Jobs) != 1 || !c.Jobs[0].OK || c.Jobs[0].State != "cancelled" || c.Jobs[0].Result != "already cancelled" {
		t.Fatalf("cancel --json: %+v", c)
	}
	hop(t, db, "jobs", "list", "--json", "--state", "cancelled").ok(t).decode(&jobs)
	if len(jobs) != 1 || jobs[0].ID != 2 {
		t.Fatalf("cancelled: %+v", jobs)
	}
	hop(t, db, "jobs", "cancel", "99").fails(t, 1, "job 99 not found")

	// Work job 1 and look at its result.
	done := work(t, db, 1)[0]
	if done.State != hopper.StateCompleted {
		t.Fatalf("job 1: %s %s", done.State, done.LastError)
	}
	hop(t, db, "jobs", "get", "1").ok(t).has(t, "completed", "Attempts:", "EXIT", "attempt 1: exit code 0", "stdout:", "hello world", "Result:", "exit code 0")
	hop(t, db, "jobs", "list", "--state", "completed").ok(t).has(t, "completed", "ended")
}

func TestEnqueueOptions(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	at := time.Now().Add(2 * time.Hour).UTC().Truncate(time.Second)
	id := hop(t, db, "enqueue", "--queue", "reports", "--priority", "-3", "--max-attempts", "4", "--timeout", "90s",
		"--retry-backoff", "list:5s,30s,300s", "--at", at.Format(time.RFC3339), "--unique", "report-1",
		"exec", "--env", "A=1", "--env", "B=x,y", "--dir", "/tmp", "--permanent-exit-codes", "2,64", "--", "./report.sh", "--fast").ok(t).id(t)
	j := getJobJSON(t, db, id)
	if j.Queue != "reports" || j.Priority != -3 || j.MaxAttempts != 4 || j.Timeout != 90*time.Second ||
		!j.RunAt.Equal(at) || j.UniqueKey != "report-1" || j.State != hopper.StateScheduled {
		t.Fatalf("job %+v", j)
	}
	if j.Retry == nil || j.Retry.Strategy != backoff.StrategyList || len(j.Retry.Delays) != 3 || j.Retry.Delays[2] != 300*time.Second {
		t.Fatalf("retry %+v", j.Retry)
	}
	var a kinds.ExecArgs
	json.Unmarshal(j.Args, &a)
	if a.Command != "./report.sh" || strings.Join(a.Args, " ") != "--fast" || strings.Join(a.Env, ";") != "A=1;B=x,y" ||
		a.Dir != "/tmp" || len(a.PermanentExitCodes) != 2 || a.PermanentExitCodes[1] != 64 {
		t.Fatalf("args %+v", a)
	}

	// A duplicate prints the existing ID and says so.
	r := hop(t, db, "enqueue", "--unique", "report-1", "exec", "--", "true").ok(t)
	if r.id(t) != id || !strings.Contains(r.err, "not enqueued") || !strings.Contains(r.err, "report-1") {
		t.Fatalf("duplicate: %+v", r)
	}

	// A debounced enqueue of a key whose job waits merges into it: its ID,
	// a note, the job's args replaced.
	did := hop(t, db, "enqueue", "--unique", "sync-1", "--debounce", "1h", "--debounce-max", "2h", "exec", "--", "echo", "one").ok(t).id(t)
	r = hop(t, db, "enqueue", "--unique", "sync-1", "--debounce", "1h", "exec", "--", "echo", "two").ok(t)
	if r.id(t) != did || !strings.Contains(r.err, "debounced") || !strings.Contains(r.err, "sync-1") {
		t.Fatalf("debounced: %+v", r)
	}
	json.Unmarshal(getJobJSON(t, db, did).Args, &a)
	if a.Command != "echo" || strings.Join(a.Args, " ") != "two" {
		t.Fatalf("debounced job's args %+v, want the last enqueue's", a)
	}

	// exec takes the flags after the command as the command's.
	id = hop(t, db, "enqueue", "exec", "ls", "-la", "--color").ok(t).id(t)
	json.Unmarshal(getJobJSON(t, db, id).Args, &a)
	if a.Command != "ls" || strings.Join(a.Args, " ") != "-la --color" {
		t.Fatalf("args %+v", a)
	}

	// http, with --json printing the job.
	body := filepath.Join(t.TempDir(), "body.json")
	os.WriteFile(body, []byte(`{"x":1}`), 0o644)
	var hj hopper.Job
	hop(t, db, "enqueue", "--json", "--fixed-backoff-typo-free", "http").fails(t, 2, "unknown flag")
	hop(t, db, "enqueue", "--json", "--retry-backoff", "fixed:5s", "http", "--url", "https://example.com/hook",
		"--header", "Content-Type: application/json", "--header", "X-A:b", "--data", "@"+body, "--retry-4xx").ok(t).decode(&hj)
	var h kinds.HTTPArgs
	json.Unmarshal(hj.Args, &h)
	if hj.Kind != "http" || h.URL != "https://example.com/hook" || h.Method != "POST" || h.Body != `{"x":1}` ||
		h.Headers["Content-Type"] != "application/json" || h.Headers["X-A"] != "b" || !h.RetryOn4xx ||
		hj.Retry == nil || hj.Retry.Base != 5*time.Second {
		t.Fatalf("http job %+v args %+v", hj, h)
	}
	hop(t, db, "enqueue", "http", "--url", "ftp://x").fails(t, 2, "scheme must be http or https")
	hop(t, db, "enqueue", "http").fails(t, 2, "--url")
	hop(t, db, "enqueue", "exec").fails(t, 2, "needs a command")
	hop(t, db, "enqueue").fails(t, 2, "say what to enqueue")
	hop(t, db, "enqueue", "--retry-backoff", "sometimes", "exec", "true").fails(t, 2, "--retry-backoff")
	hop(t, db, "enqueue", "--delay", "1m", "--at", at.Format(time.RFC3339), "exec", "true").fails(t, 2, "not both")
	hop(t, db, "enqueue", "--max-attempts", "-1", "exec", "true").fails(t, 2, "max-attempts")
}

func TestReschedule(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	id := hop(t, db, "enqueue", "--delay", "1h", "exec", "--", "true").ok(t).id(t)
	at := time.Now().Add(3 * time.Hour).UTC().Truncate(time.Second)
	hop(t, db, "jobs", "reschedule", idArg(id), "--at", at.Format(time.RFC3339), "--priority", "-7").ok(t).has(t, "rescheduled", "priority -7")
	j := getJobJSON(t, db, id)
	if !j.RunAt.Equal(at) || j.Priority != -7 {
		t.Fatalf("%+v", j)
	}
	hop(t, db, "jobs", "reschedule", idArg(id), "--delay", "0").ok(t)
	if j := getJobJSON(t, db, id); j.State != hopper.StateAvailable {
		t.Fatalf("after --delay 0: %s", j.State)
	}
	hop(t, db, "jobs", "reschedule", idArg(id)).fails(t, 2, "give --at, --delay or --priority")
	hop(t, db, "jobs", "reschedule", idArg(id), "--at", "soon").fails(t, 2, "RFC 3339")
	hop(t, db, "jobs", "cancel", idArg(id)).ok(t)
	hop(t, db, "jobs", "reschedule", idArg(id), "--delay", "1m").fails(t, 1, "cannot be rescheduled", "it is cancelled")
	hop(t, db, "jobs", "reschedule", "42", "--delay", "1m").fails(t, 1, "job 42 not found")
}

func TestBulkEnqueue(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	var in strings.Builder
	for i := range 2500 {
		in.WriteString(`{"kind":"exec","args":{"command":"echo","args":["` + idArg(hopper.ID(i)) + `"]},"queue":"bulk","priority":1,"delay":"1h","max_attempts":2}` + "\n")
	}
	in.WriteString("\n")
	in.WriteString(`{"kind":"custom","args":{"anything":[1,2]},"unique_key":"u","timeout":"5s","retry_backoff":"fixed:1s"}` + "\n")
	in.WriteString(`{"kind":"custom","unique_key":"u"}` + "\n")
	r := hopIn(t, db, in.String(), "enqueue", "--bulk", "--external-kinds", "custom,other").ok(t)
	if strings.TrimSpace(r.out) != "2501" || !strings.Contains(r.err, "hopper: 1 job not enqueued: its unique key") {
		t.Fatalf("bulk: %+v", r)
	}
	var st statsJSON
	hop(t, db, "stats", "--json").ok(t).decode(&st)
	if st.Queues["bulk"]["scheduled"] != 2500 || st.Waiting != 2501 {
		t.Fatalf("stats %+v", st)
	}
	j := getJobJSON(t, db, 2501)
	if j.Kind != "custom" || j.Timeout != 5*time.Second || j.Retry == nil || j.Retry.Strategy != backoff.StrategyFixed {
		t.Fatalf("custom job %+v", j)
	}

	hopIn(t, db, `{"kind":"exec","args":{"command":"true"}}`+"\n"+`{"kind":"exec","args":{"comand":"true"}}`, "enqueue", "--bulk").
		fails(t, 2, "line 2", "comand", "0 jobs enqueued")
	hopIn(t, db, "not json\n", "enqueue", "--bulk").fails(t, 2, "line 1")
	hopIn(t, db, `{"args":{}}`, "enqueue", "--bulk").fails(t, 2, "line 1", `"kind": missing`)
	hopIn(t, db, `{"kind":"x","delay":"5s","run_at":"2030-01-01T00:00:00Z"}`, "enqueue", "--bulk", "--external-kinds", "x").fails(t, 2, "not both")
	hopIn(t, db, `{"kind":"x","max_attempts":-1}`, "enqueue", "--bulk", "--external-kinds", "x").fails(t, 2, "line 1", "max_attempts")
	hopIn(t, db, "", "enqueue", "--bulk", "--queue", "q").fails(t, 2, "--bulk takes the job options from each line", "--queue")
	var n map[string]int
	hopIn(t, db, `{"kind":"x"}`, "enqueue", "--bulk", "--json", "--external-kinds", "x").ok(t).decode(&n)
	if n["enqueued"] != 1 {
		t.Fatalf("bulk --json %v", n)
	}
}

func TestStats(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	hop(t, db, "enqueue", "exec", "--", "true").ok(t)
	hop(t, db, "enqueue", "--queue", "other", "--delay", "1h", "exec", "--", "true").ok(t)
	work(t, db, 1)
	var st statsJSON
	hop(t, db, "stats", "--json").ok(t).decode(&st)
	if st.Totals["completed"] != 1 || st.Queues["other"]["scheduled"] != 1 || st.Waiting != 1 || st.Running != 0 ||
		st.Total != 2 || st.Finished["completed"] != 1 {
		t.Fatalf("stats %+v", st)
	}
	// The throughput is measured from the first job finished in the last
	// minute (at least one second), not over the whole minute: one job
	// finished moments ago is about 1 job/s, not 1/60. The bound leaves
	// 20s for this test to get here from the job's completion.
	if st.Throughput < 0.05 {
		t.Errorf("throughput %g jobs/s: want the rate since the first job finished (about 1), not completed/60", st.Throughput)
	}
	hop(t, db, "stats").ok(t).has(t, "QUEUE", "SCHEDULED", "COMPLETED", "default", "other", "(all)", "last minute: 1 completed")
}
