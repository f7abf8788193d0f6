package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/internal/logtest"
	"github.com/hopperq/hopper/internal/pgtest"
	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"
)

func TestUsageAndErrors(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	hop(t, db, "jobs", "list").fails(t, 1, "no database at "+db)
	hop(t, db, "enqueue", "--delay", "1h", "exec", "true").ok(t)
	for _, tc := range []struct {
		args []string
		code int
		want []string
	}{
		{[]string{"enqueue", "--at", "tomorrow", "exec", "true"}, 2, []string{`bad --at tomorrow`, "RFC 3339"}},
		{[]string{"enqueue", "--delay", "soon", "exec", "true"}, 2, []string{"--delay"}},
		{[]string{"jobs", "list", "--state", "sleeping"}, 2, []string{`unknown state "sleeping"`}},
		{[]string{"jobs", "list", "--limit", "0"}, 2, []string{"--limit"}},
		{[]string{"jobs", "get"}, 2, []string{"needs a job ID"}},
		{[]string{"jobs", "get", "1", "2"}, 2, []string{"takes only a job ID, got 2 arguments: 1 2"}},
		{[]string{"jobs", "get", "abc"}, 2, []string{`bad job ID "abc"`}},
		{[]string{"enqueue", "http", "--url", "https://example.com", "--data", "@/nonexistent/body"}, 2, []string{"bad --data", "/nonexistent/body"}},
		{[]string{"jobs", "get", "-5"}, 2, []string{"unknown shorthand flag"}},
		{[]string{"jobs", "get", "999"}, 1, []string{"job 999 not found"}},
		{[]string{"jobs", "cancel"}, 2, []string{"needs one or more job IDs"}},
		{[]string{"jobs", "frobnicate"}, 2, []string{`unknown command "frobnicate"`}},
		{[]string{"frobnicate"}, 2, []string{`unknown command "frobnicate"`}},
		{[]string{"stats", "extra"}, 2, []string{"takes no arguments"}},
		{[]string{"serve", "--log-level", "loud"}, 2, []string{"--log-level"}},
		{[]string{"serve", "--queues", "a:0"}, 2, []string{"--queues"}},
		{[]string{"serve", "--workers", "0"}, 2, []string{"--workers"}},
		{[]string{"bench", "--store", "paper"}, 2, []string{"--store"}},
		{[]string{"bench", "--mixed", "--loads", "30%,fast"}, 2, []string{"--loads", `"fast"`}},
		{[]string{"bench", "--mixed", "--loads", "-5%"}, 2, []string{"--loads", `"-5%"`}},
		{[]string{"bench", "--mixed", "--producers", "0"}, 2, []string{"--producers"}},
		{[]string{"bench", "--mixed", "--duration", "0s"}, 2, []string{"--duration"}},
		{[]string{"bench", "--producers", "4"}, 2, []string{"--producers needs --mixed"}},
		{[]string{"demo", "--duration", "0s"}, 2, []string{"--duration"}},
	} {
		r := hop(t, db, tc.args...)
		r.fails(t, tc.code, tc.want...)
		if tc.code == 2 && !strings.Contains(r.err, "--help' for usage") {
			t.Errorf("%v: no usage hint in %q", tc.args, r.err)
		}
	}
}

func TestBadDatabasePaths(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.db")
	content := bytes.Repeat([]byte("this is not a database\n"), 500)
	if err := os.WriteFile(garbage, content, 0o644); err != nil {
		t.Fatal(err)
	}
	before, _ := os.Stat(garbage)
	hop(t, garbage, "jobs", "list").fails(t, 1, garbage, "not a Hopper/SQLite database")
	hop(t, garbage, "jobs", "cancel", "1").fails(t, 1, garbage, "not a Hopper/SQLite database")
	hop(t, garbage, "migrate").fails(t, 1, garbage, "not a Hopper/SQLite database")
	hop(t, garbage, "enqueue", "exec", "true").fails(t, 1, "not a Hopper/SQLite database")
	after, err := os.Stat(garbage)
	if got, _ := os.ReadFile(garbage); err != nil || !bytes.Equal(got, content) || !after.ModTime().Equal(before.ModTime()) {
		t.Fatal("the garbage file was changed")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Logf("files next to the garbage file: %v", names)
	}

	missing := filepath.Join(dir, "no", "such", "dir", "hopper.db")
	hop(t, missing, "enqueue", "exec", "true").fails(t, 1, "directory "+filepath.Join(dir, "no", "such", "dir")+" does not exist")
	hop(t, missing, "jobs", "list").fails(t, 1, "does not exist")
	if _, err := os.Stat(filepath.Join(dir, "no")); err == nil {
		t.Fatal("a directory was created")
	}
	hop(t, dir, "jobs", "list").fails(t, 1, "is a directory")
	hop(t, "", "jobs", "list").fails(t, 2, "--db must not be empty")
}

// TestHelp runs --help on every command.
func TestHelp(t *testing.T) {
	t.Parallel()
	var paths [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		paths = append(paths, path)
		for _, sub := range c.Commands() {
			if sub.Name() != "help" {
				walk(sub, append(append([]string{}, path...), sub.Name()))
			}
		}
	}
	walk((&app{}).root(), nil)
	if len(paths) < 20 {
		t.Fatalf("only %d commands", len(paths))
	}
	for _, p := range paths {
		r := hop(t, "unused.db", append(p, "--help")...)
		if r.code != 0 || !strings.Contains(r.out, "Usage:") || r.err != "" {
			t.Errorf("%v --help: exit %d, stderr %q, stdout %q", p, r.code, r.err, r.out)
		}
	}
	hop(t, "unused.db").ok(t).has(t, "Available Commands:", "serve", "demo")
	hop(t, "unused.db", "jobs").ok(t).has(t, "list", "get", "cancel", "reschedule")
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader.
type syncBuffer = logtest.Buffer

func TestServe(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ok := hop(t, db, "enqueue", "exec", "--", "echo", "served").ok(t).id(t)
	bad := hop(t, db, "enqueue", "--max-attempts", "1", "exec", "--", "sh", "-c", "exit 9").ok(t).id(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr syncBuffer
	code := make(chan int, 1)
	go func() {
		code <- Run(ctx, []string{"--db", db, "serve", "--workers", "2", "--queues", "default:2", "--shutdown-timeout", "5s"},
			IO{In: strings.NewReader(""), Out: &bytes.Buffer{}, Err: &stderr})
	}()
	// Another client on the same file waits for the server's work.
	jobs := waitFinished(t, db, ok, bad)
	if jobs[0].State != hopper.StateCompleted || jobs[1].State != hopper.StateDead {
		t.Fatalf("states %s %s", jobs[0].State, jobs[1].State)
	}
	cancel()
	if c := <-code; c != 0 {
		t.Fatalf("serve exited %d: %s", c, stderr.String())
	}
	// The default level is info: the server's life and the failures, not
	// a line per transition (--log-level debug; see cmd/hopper's tests).
	log := stderr.String()
	for _, want := range []string{"hopper serving", "level=ERROR", "job dead", "exit code 9", "stopped"} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	for _, unwanted := range []string{"level=DEBUG", "job started", "job completed"} {
		if strings.Contains(log, unwanted) {
			t.Errorf("log at the default level has %q:\n%s", unwanted, log)
		}
	}
}

// waitFinished waits until every job is finished, through a second client
// on the same file: Client.Wait notices another process's work by itself.
func waitFinished(t *testing.T, db string, ids ...hopper.ID) []*hopper.Job {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := hopper.Open(ctx, "sqlite:"+db, hopper.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop(context.Background())
	var out []*hopper.Job
	for _, id := range ids {
		j, err := c.Wait(ctx, id)
		if err != nil {
			t.Fatalf("job %d: %v (state %v)", id, err, j)
		}
		out = append(out, j)
	}
	return out
}

func TestDemoTwice(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	for run := 1; run <= 2; run++ {
		r := hop(t, db, "demo").ok(t) // ends when all is shown; 30s bounds a failure
		r.has(t, "all shown:")
		r.has(t, "started (attempt 1 of 3)", "retrying at", "dead after 3 attempts", "enqueued by schedule demo-tick",
			"completed", `"tick"`, "ran in priority order", "Summary:")
		// The hints' commands work as they are: on the same database.
		again := "hopper --db " + shellQuote([]string{db})
		r.has(t, "now try: "+again+" jobs list / "+again+" dlq list", "("+again+" schedule resume demo-tick lets "+again+" serve fire it)")
		if t.Failed() {
			t.Fatalf("run %d:\n%s", run, r.out)
		}
	}
	var dead []*hopper.Job
	hop(t, db, "dlq", "list", "--json").ok(t).decode(&dead)
	if len(dead) != 2 || len(dead[1].Attempts) != 3 {
		t.Fatalf("%d dead jobs", len(dead))
	}
	var scheds []*hopper.Schedule
	hop(t, db, "schedule", "list", "--json").ok(t).decode(&scheds)
	if len(scheds) != 1 || !scheds[0].Paused {
		t.Fatalf("schedules %+v", scheds)
	}
}

// TestDemoCutShort: a demo that ends before its failing job is dead says
// so and suggests no dlq retry of it (that would fail: it is not dead).
func TestDemoCutShort(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	r := hop(t, db, "demo", "--duration", "1ms").ok(t) // the failing job's 3 attempts take 2s at least
	r.has(t, "so far and is", "now try:", "jobs get")
	if strings.Contains(r.out, "dlq retry") || !strings.Contains(r.out, "Everything is in "+db) {
		t.Errorf("demo cut short:\n%s", r.out)
	}
}

// TestDemoAgain: the demo's hints name --db as given, but with a URL's
// password shown as xxxxx and a note saying so.
func TestDemoAgain(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		db            string
		given         bool
		again, noteOf string
	}{
		{"x.db", false, "hopper", ""},
		{"my db.db", true, "hopper --db 'my db.db'", ""},
		{"postgres://u@h/d?sslmode=disable", true, "hopper --db 'postgres://u@h/d?sslmode=disable'", ""},
		{"postgres://u:s3cret@h/d", true, "hopper --db postgres://u:xxxxx@h/d", "xxxxx stands for the password"},
	} {
		again, note := demoAgain("hopper", c.db, c.given)
		if again != c.again || !strings.Contains(note, c.noteOf) || (c.noteOf == "") != (note == "") || strings.Contains(again+note, "s3cret") {
			t.Errorf("demoAgain(%q, %v) = %q, %q; want %q and a note with %q", c.db, c.given, again, note, c.again, c.noteOf)
		}
	}
}

func TestBench(t *testing.T) {
	t.Parallel()
	r := hop(t, "unused.db", "bench", "--store", "memory", "--jobs", "3000", "--batch", "500", "--latency-jobs", "50").ok(t)
	r.has(t, "store    memory", "GOMAXPROCS", "go1.", "inserted", "worked", "jobs/s", "p50", "p99", "max")
	var res benchResult
	r = hop(t, "unused.db", "bench", "--json", "--store", "sqlite", "--durability", "normal", "--jobs", "300", "--workers", "4", "--latency-jobs", "20").ok(t)
	r.decode(&res)
	var raw map[string]any
	r.decode(&raw)
	for _, k := range []string{"insert_time", "work_time", "latency_p50", "latency_max"} {
		if s, ok := raw[k].(string); !ok || !strings.HasSuffix(s, "s") {
			t.Errorf("bench --json: %s is %v, want a duration string", k, raw[k])
		}
	}
	if res.Store != "sqlite" || res.Jobs != 300 || res.InsertRate <= 0 || res.WorkRate <= 0 || res.Max < res.P50 || res.P50 <= 0 ||
		res.Durability != "normal" || !strings.HasPrefix(filepath.Base(filepath.Dir(res.File)), "hopper-bench-") {
		b, _ := json.Marshal(res)
		t.Fatalf("bench: %s", b)
	}
	if _, err := os.Stat(res.File); err == nil {
		t.Error("bench left its database behind")
	}
}

// TestBenchMixed: bench --mixed measures the capacity, then each load
// on a new database, and leaves no database behind.
func TestBenchMixed(t *testing.T) {
	t.Parallel()
	r := hop(t, "unused.db", "bench", "--mixed", "--store", "memory", "--jobs", "2000", "--duration", "200ms", "--warmup", "0s",
		"--loads", "20%,max").ok(t)
	r.has(t, "store    memory", "capacity:", "steady producers: 8 goroutines", "worked/inserted", "20%", "max", "p99")
	var res mixedResult
	hop(t, "unused.db", "bench", "--mixed", "--json", "--durability", "normal", "--jobs", "300", "--workers", "4",
		"--producers", "2", "--duration", "1s", "--warmup", "0s", "--loads", "500/s").ok(t).decode(&res)
	if res.Store != "sqlite" || res.CapacityJobs != 300 || res.Capacity <= 0 || res.Producers != 2 || len(res.Loads) != 1 {
		b, _ := json.Marshal(res)
		t.Fatalf("bench --mixed: %s", b)
	}
	if l := res.Loads[0]; l.Load != "500/s" || l.Offered != 500 || l.Inserted <= 0 || l.Worked <= 0 || l.P99 < l.P50 || l.Samples == 0 {
		t.Fatalf("bench --mixed: load %+v", l)
	}
}

// TestBenchPostgres: bench --store postgres works in a schema of its own in
// the --db database and drops it afterwards.
func TestBenchPostgres(t *testing.T) {
	t.Parallel()
	hop(t, "unused.db", "bench", "--store", "postgres").fails(t, 2, "--store postgres needs --db")
	db := pgtest.ServerURL(t)
	var res benchResult
	hop(t, db, "bench", "--json", "--store", "postgres", "--jobs", "300", "--workers", "4", "--latency-jobs", "20").ok(t).decode(&res)
	if res.Store != "postgres" || res.Jobs != 300 || res.WorkRate <= 0 || res.P50 <= 0 || !strings.HasPrefix(res.Schema, "hopper_bench_") {
		b, _ := json.Marshal(res)
		t.Fatalf("bench: %s", b)
	}
	conn, err := pgx.Connect(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var left bool
	if err := conn.QueryRow(context.Background(), `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`, res.Schema).Scan(&left); err != nil || left {
		t.Fatalf("bench left its schema %s behind (%v)", res.Schema, err)
	}
}

// TestDBFromEnvironment: a bad database that came from $HOPPER_DB is named
// so (the user passed no --db), and help shows $HOPPER_DB's URL, the
// default of --db, without its password. Not parallel: it sets the
// environment.
func TestDBFromEnvironment(t *testing.T) {
	t.Setenv("HOPPER_DB", "sqlit:x.db")
	hop2 := func(args ...string) result { // without hop's --db
		var out, errOut bytes.Buffer
		code := Run(context.Background(), args, IO{In: strings.NewReader(""), Out: &out, Err: &errOut})
		return result{out.String(), errOut.String(), code, t}
	}
	hop2("jobs", "list").fails(t, ExitUsage, `bad $HOPPER_DB "sqlit:x.db": unknown scheme "sqlit"`)
	hop2("--db", "sqlit:y.db", "jobs", "list").fails(t, ExitUsage, `bad --db "sqlit:y.db"`)
	t.Setenv("HOPPER_DB", "postgres://u:s3cret@db.invalid/app")
	r := hop2("--help").ok(t)
	r.has(t, `(default "postgres://u:xxxxx@db.invalid/app")`)
	if strings.Contains(r.out, "s3cret") {
		t.Errorf("help shows $HOPPER_DB's password:\n%s", r.out)
	}
}
