package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/kinds"
)

// TestListPagingNote: jobs list and dlq list say on stderr when more jobs
// match than --limit shows, and how to get the next page.
func TestListPagingNote(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	var ids []hopper.ID
	for range 3 {
		ids = append(ids, hop(t, db, "enqueue", "--max-attempts", "1", "exec", "--", "false").ok(t).id(t))
	}
	r := hop(t, db, "jobs", "list", "--limit", "2").ok(t)
	if !strings.Contains(r.err, "2 jobs listed and more match") || !strings.Contains(r.err, "--after 2") {
		t.Errorf("jobs list --limit 2: stderr %q", r.err)
	}
	r = hop(t, db, "jobs", "list", "--limit", "2", "--json").ok(t)
	var jobs []*hopper.Job
	r.decode(&jobs)
	if len(jobs) != 2 || !strings.Contains(r.err, "--after 2") {
		t.Errorf("jobs list --limit 2 --json: %d jobs, stderr %q", len(jobs), r.err)
	}
	r = hop(t, db, "jobs", "list", "--limit", "2", "--after", "2").ok(t)
	if r.err != "" || !strings.Contains(r.out, "false") {
		t.Errorf("last page: stderr %q", r.err)
	}
	if r := hop(t, db, "jobs", "list", "--limit", "3").ok(t); r.err != "" {
		t.Errorf("exactly --limit jobs: stderr %q", r.err)
	}
	if r := hop(t, db, "jobs", "list", "--limit", "2", "--desc").ok(t); !strings.Contains(r.err, "--after 2") {
		t.Errorf("--desc: stderr %q", r.err)
	}
	work(t, db, ids...)
	if r := hop(t, db, "dlq", "list", "--limit", "1").ok(t); !strings.Contains(r.err, "--after 1") {
		t.Errorf("dlq list --limit 1: stderr %q", r.err)
	}
}

// TestJobOutput: jobs get shows, per attempt of an exec job, the exit code
// and the last lines of stdout and stderr, on failure and on success; the
// JSON has each attempt's result.
func TestJobOutput(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	marker := t.TempDir() + "/ran"
	script := `echo "out $(cat ` + marker + ` 2>/dev/null || echo 1)"; echo "err line" >&2; ` +
		`if [ -e ` + marker + ` ]; then seq 1 30; exit 0; fi; echo 2 > ` + marker + `; exit 7`
	id := hop(t, db, "enqueue", "--retry-backoff", "fixed:10ms", "exec", "--", "sh", "-c", script).ok(t).id(t)
	if j := work(t, db, id)[0]; j.State != hopper.StateCompleted || len(j.Attempts) != 2 {
		t.Fatalf("job: %s, %d attempts", j.State, len(j.Attempts))
	}
	r := hop(t, db, "jobs", "get", idArg(id)).ok(t)
	r.has(t, "EXIT", "attempt 1: exit code 7", "out 1", "err line", "attempt 2: exit code 0",
		"stdout (last 10 of 31 lines kept", "      21\n", "      30\n")
	if strings.Contains(r.out, "      20\n") {
		t.Errorf("more than the last 10 lines shown:\n%s", r.out)
	}
	j := getJobJSON(t, db, id)
	var res kinds.ExecResult
	if err := json.Unmarshal(j.Attempts[0].Result, &res); err != nil || res.ExitCode != 7 || res.StderrTail != "err line\n" || res.StdoutTail != "out 1\n" {
		t.Errorf("attempt 1 result in --json: %s (%v)", j.Attempts[0].Result, err)
	}
}

// TestPrintJobAttempts: the attempts of an exec job as jobs get prints
// them, from a job as the store returns it (each failed attempt with its
// partial result, the completing one with the job's result).
func TestPrintJobAttempts(t *testing.T) {
	t.Parallel()
	j := &hopper.Job{ID: 7, Kind: "exec", State: hopper.StateCompleted, Attempt: 2, MaxAttempts: 3,
		Args:   json.RawMessage(`{"command":"sh"}`),
		Result: json.RawMessage(`{"exit_code":0,"duration":"2ms","stdout_tail":"done\n","stderr_tail":""}`),
		Attempts: []hopper.Attempt{
			{Attempt: 1, Outcome: "retrying", Error: "exec sh: exit code 3: oops",
				Result: json.RawMessage(`{"exit_code":3,"duration":"1ms","stdout_tail":"a\nb\n","stderr_tail":"oops\n"}`)},
			{Attempt: 2, Outcome: "completed"},
			{Attempt: 3, Outcome: "interrupted", Result: json.RawMessage(`null`)},
		}}
	var b strings.Builder
	if err := printJob(&b, j, ""); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"EXIT", "attempt 1: exit code 3 after 1ms\n    stdout:\n      a\n      b\n    stderr:\n      oops\n",
		"attempt 2: exit code 0 after 2ms\n    stdout:\n      done\n    stderr: (empty)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "attempt 3:") {
		t.Errorf("an attempt without a result shows output:\n%s", out)
	}
}

// TestVersion: --version names the build and the Go version.
func TestVersion(t *testing.T) {
	t.Parallel()
	r := hop(t, "unused.db", "--version").ok(t)
	if !strings.HasPrefix(r.out, "hopper ") || !strings.Contains(r.out, runtime.Version()) {
		t.Errorf("--version: %q", r.out)
	}
	info := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.time", Value: "2026-01-02T03:04:05Z"}, {Key: "vcs.modified", Value: "true"},
	}}
	for _, tc := range []struct {
		set  string
		info *debug.BuildInfo
		want string
	}{
		{"v1.2.3", info, "v1.2.3 (go1.26.0)"},
		{"", info, "devel 0123456789ab+dirty 2026-01-02T03:04:05Z (go1.26.0)"},
		{"", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v0.4.0"}}, "v0.4.0 (go1.26.0)"},
		{"", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"}}, "devel (go1.26.0)"},
		{"", nil, "devel (unknown Go version)"},
	} {
		if got := versionString(tc.set, tc.info, tc.info != nil); got != tc.want {
			t.Errorf("versionString(%q, …) = %q, want %q", tc.set, got, tc.want)
		}
	}
}

// TestServeSignalAtStartup: a signal that arrives while serve starts stops
// it before it takes any job, cleanly (exit 0).
func TestServeSignalAtStartup(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	id := hop(t, db, "enqueue", "exec", "--", "true").ok(t).id(t)
	sigs := make(chan os.Signal, 1)
	sigs <- syscall.SIGTERM // arrives before the store is open
	var out, errOut bytes.Buffer
	a := &app{IO: IO{In: strings.NewReader(""), Out: &out, Err: &errOut},
		signals: func() (<-chan os.Signal, func()) { return sigs, func() {} }}
	if code := a.run(context.Background(), []string{"--db", db, "serve"}); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	log := errOut.String()
	if strings.Contains(log, "hopper serving") || !strings.Contains(log, "interrupted while starting") {
		t.Errorf("log:\n%s", log)
	}
	if j := getJobJSON(t, db, id); j.State != hopper.StateAvailable || j.Attempt != 0 {
		t.Errorf("job %d: %s, attempt %d: the server took it", id, j.State, j.Attempt)
	}
}

// TestStateLine: jobs get shows a cancellation request beside a running
// job, and beside one that completed anyway, but not beside a cancelled
// job, where it would only repeat the state.
func TestStateLine(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		state     hopper.State
		requested bool
		want      string
	}{
		{hopper.StateRunning, false, "running"},
		{hopper.StateRunning, true, "running (cancellation requested)"},
		{hopper.StateCancelled, true, "cancelled"},
		{hopper.StateCompleted, true, "completed (its cancellation was requested while it ran)"},
	} {
		if got := stateLine(&hopper.Job{State: c.state, CancelRequested: c.requested}); got != c.want {
			t.Errorf("%s, cancel requested %v: %q, want %q", c.state, c.requested, got, c.want)
		}
	}
}

// TestPrintJobReleased: a job a shutdown gave back shows the released
// attempt as not counted beside "attempt 0", and no started time of its
// own (the Attempts table has the released attempt's).
func TestPrintJobReleased(t *testing.T) {
	t.Parallel()
	started := time.Date(2026, 11, 23, 10, 36, 27, 0, time.UTC)
	j := &hopper.Job{ID: 9, Kind: "ok", State: hopper.StateAvailable, Attempt: 0, MaxAttempts: 25,
		RunAt: started.Add(time.Minute), StartedAt: started,
		Attempts: []hopper.Attempt{{Attempt: 1, StartedAt: started, Outcome: job.OutcomeReleased}}}
	var b strings.Builder
	if err := printJob(&b, j, ""); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.Contains(out, "0 of 25 (+1 released by a shutdown, not counted)\n") {
		t.Errorf("the attempt line does not say the released attempt is not counted:\n%s", out)
	}
	if strings.Contains(out, "started:") {
		t.Errorf("a waiting job shows its released attempt's start as its own:\n%s", out)
	}
	j.State, j.Attempt = hopper.StateRunning, 1
	j.Attempts = append(j.Attempts, hopper.Attempt{Attempt: 1, StartedAt: started, Outcome: job.OutcomeReleased})
	b.Reset()
	if err := printJob(&b, j, ""); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); !strings.Contains(out, "1 of 25 (+2 released by shutdowns, not counted)\n") || !strings.Contains(out, "started:") {
		t.Errorf("a running job twice released:\n%s", out)
	}
}
