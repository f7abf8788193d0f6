//go:build unix

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/internal/pgtest"
	"github.com/hopperq/hopper/store"
	"github.com/jackc/pgx/v5"
)

// pgLeaderName is the name the maintenance services lead under in the
// leaders table (internal/maintenance).
const pgLeaderName = "maintenance"

// pgCluster is hopper serve processes sharing a fresh schema of the test
// server, which is dropped when the test ends.
type pgCluster struct {
	*hop
	schema  string
	conn    *pgx.Conn // the test's own, to watch the tables (test goroutine only)
	flags   []string  // of every serve
	servers []*pgServer
}

// pgServer is one hopper serve of a cluster.
type pgServer struct {
	*server
	n    int    // its number: its log is serve-N.log
	id   string // its worker ID: the holder of its leases and of the leadership
	pid  int
	gone bool // killed or stopped, and waited for
}

func (s *pgServer) String() string { return fmt.Sprintf("server %d (pid %d, %s)", s.n, s.pid, s.id) }

func newPGCluster(t *testing.T, flags ...string) *pgCluster {
	t.Helper()
	// A fresh schema of the server of HOPPER_TEST_POSTGRES (the tests skip
	// without it, fail under CI), dropped last: after the servers are gone.
	// The server's connections are shared with other tests: small pools.
	db := pgtest.StoreURL(t, 5)
	u, err := url.Parse(db)
	if err != nil {
		t.Fatal(err)
	}
	schema := u.Query().Get("hopper_schema")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, pgtest.ServerURL(t))
	if err != nil {
		t.Fatalf("connect to the server of %s: %v", pgtest.EnvURL, err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	logs := keptDir(t, "hopper-pgcrash-")
	// The http jobs of these tests call a recorder on loopback, which the
	// http policy refuses unless allowed (the commands that enqueue check
	// it too).
	env := []string{"HOPPER_HTTP_ALLOW=127.0.0.1"}
	cl := &pgCluster{hop: &hop{t: t, bin: hopperBin(t), db: db, logs: logs, env: env}, schema: schema, conn: conn, flags: flags}
	t.Cleanup(func() { // a failing test leaves no server behind
		for _, s := range cl.servers {
			if !s.gone {
				s.cmd.Process.Signal(syscall.SIGKILL) // also ends a stopped process
				s.cmd.Wait()
			}
		}
	})
	return cl
}

// keptDir returns a new directory (named prefix and a random suffix)
// removed at the end of the test unless it failed: then the test logs
// where it is kept.
func keptDir(t *testing.T, prefix string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("logs kept in %s", dir)
			return
		}
		os.RemoveAll(dir)
	})
	return dir
}

var servingRE = regexp.MustCompile(`worker_id=(\S+) pid=(\d+)`)

// start starts a server and waits until it serves.
func (cl *pgCluster) start(workers int) *pgServer {
	cl.t.Helper()
	s := &pgServer{server: cl.serve(workers, cl.flags...), n: cl.hop.servers}
	cl.servers = append(cl.servers, s)
	line := s.log.waitLine(cl.t, time.Minute, `msg="hopper serving"`)
	m := servingRE.FindStringSubmatch(line)
	if m == nil {
		cl.t.Fatalf("server %d: no worker ID in %q", s.n, line)
	}
	s.id = m[1]
	s.pid, _ = strconv.Atoi(m[2])
	if s.pid != s.cmd.Process.Pid {
		cl.t.Fatalf("server %d: the serving line says pid %d, the process is %d", s.n, s.pid, s.cmd.Process.Pid)
	}
	return s
}

// kill kills s with SIGKILL and waits for it.
func (cl *pgCluster) kill(s *pgServer) {
	cl.t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		cl.t.Fatal(err)
	}
	s.cmd.Wait()
	s.gone = true
}

// stopAll stops the live servers gracefully; each must exit 0.
func (cl *pgCluster) stopAll() {
	cl.t.Helper()
	for _, s := range cl.live() {
		cl.stop(s.server)
		s.gone = true
	}
}

func (cl *pgCluster) live() []*pgServer {
	var out []*pgServer
	for _, s := range cl.servers {
		if !s.gone {
			out = append(out, s)
		}
	}
	return out
}

func (cl *pgCluster) byID(id string) *pgServer {
	for _, s := range cl.servers {
		if s.id == id {
			return s
		}
	}
	return nil
}

func (cl *pgCluster) table(name string) string { return pgx.Identifier{cl.schema, name}.Sanitize() }

// leader reads the leaders table: the holder of the maintenance lease, its
// term, and whether the lease runs (by the database's clock).
func (cl *pgCluster) leader() (holder string, term int64, live bool) {
	cl.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := cl.conn.QueryRow(ctx, `SELECT holder, term, lease_until > clock_timestamp() FROM `+cl.table("leaders")+` WHERE name = $1`,
		pgLeaderName).Scan(&holder, &term, &live)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", 0, false
	}
	if err != nil {
		cl.t.Fatalf("read the leaders table: %v", err)
	}
	return holder, term, live
}

// liveLeader returns the live server that leads now, or nil.
func (cl *pgCluster) liveLeader() (*pgServer, int64) {
	cl.t.Helper()
	h, term, live := cl.leader()
	if s := cl.byID(h); live && s != nil && !s.gone {
		return s, term
	}
	return nil, term
}

// waitNewLeader waits until a server other than old leads in a term after
// oldTerm, and fails the test unless one does within `within` of since: the
// promise of a new leader after the old one dies.
func (cl *pgCluster) waitNewLeader(old string, oldTerm int64, since time.Time, within time.Duration) (*pgServer, int64, time.Duration) {
	cl.t.Helper()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		h, term, live := cl.leader()
		if live && term > oldTerm && h != old {
			took := time.Since(since)
			s := cl.byID(h)
			if s == nil || s.gone {
				cl.t.Fatalf("the new leader %s (term %d) is not a live server", h, term)
			}
			return s, term, took
		}
		if time.Since(since) > within {
			cl.t.Fatalf("no new leader %s after the leader %s went: the leaders table says holder %s, term %d, lease running %v",
				within, old, h, term, live)
		}
		<-tick.C
	}
}

// client opens a client of the test's own on the cluster's database, and
// its store, closed when the test ends. It is not started: it runs no
// jobs.
func (cl *pgCluster) client() (*hopper.Client, store.Store) {
	cl.t.Helper()
	st, err := store.Open(cl.t.Context(), cl.db, store.OpenOptions{})
	if err != nil {
		cl.t.Fatal(err)
	}
	cl.t.Cleanup(func() { st.Close() })
	c, err := hopper.NewClient(hopper.Config{Store: st, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		cl.t.Fatal(err)
	}
	cl.t.Cleanup(func() { c.Stop(context.Background()) })
	return c, st
}

// count counts the jobs matching where.
func (cl *pgCluster) count(where string) int {
	cl.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var n int
	if err := cl.conn.QueryRow(ctx, `SELECT count(*) FROM `+cl.table("jobs")+` WHERE `+where).Scan(&n); err != nil {
		cl.t.Fatalf("count jobs where %s: %v", where, err)
	}
	return n
}

const pgUnfinished = `state IN ('scheduled', 'available', 'running', 'retrying')`

// poll polls cond until it holds; d only bounds a failing test.
func (cl *pgCluster) poll(d time.Duration, what string, cond func() bool) {
	cl.t.Helper()
	deadline := time.Now().Add(d)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			cl.t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		<-tick.C
	}
}

// enqueue runs hopper enqueue with args and returns the new job's ID.
func (cl *pgCluster) enqueue(args ...string) hopper.ID {
	cl.t.Helper()
	out := cl.run("", append([]string{"enqueue"}, args...)...)
	id, err := strconv.ParseInt(strings.TrimSpace(out), 10, 64)
	if err != nil {
		cl.t.Fatalf("enqueue printed %q", out)
	}
	return hopper.ID(id)
}

// allJobs lists every job of the schema.
func (cl *pgCluster) allJobs() []*hopper.Job {
	cl.t.Helper()
	var jobs []*hopper.Job
	cl.json(&jobs, "jobs", "list", "--limit", "100000")
	return jobs
}

// The servers' log lines (slog's text format) the tests read: a job's
// attempt started or ended, a schedule fired, and every line's time.
var (
	attemptLineRE = regexp.MustCompile(`msg="job (\w+)" job=(\d+) kind=\S+ queue=\S+ attempt=(\d+) `)
	firedLineRE   = regexp.MustCompile(`msg="schedule fired" .* job=(\d+) `)
	lineTimeRE    = regexp.MustCompile(`^time=(\S+) `)
)

// lineTime is the time of a log line (zero if it has none).
func lineTime(l string) time.Time {
	if m := lineTimeRE.FindStringSubmatch(l); m != nil {
		if t, err := time.Parse(time.RFC3339Nano, m[1]); err == nil {
			return t
		}
	}
	return time.Time{}
}

type jobAttempt struct {
	job     hopper.ID
	attempt int
}

// attempts reads s's log: the attempts it started and those it reported
// finished (completed, retrying, dead, cancelled, released).
func (s *pgServer) attempts() (started, finished map[jobAttempt]bool) {
	started, finished = map[jobAttempt]bool{}, map[jobAttempt]bool{}
	for _, l := range s.log.all() {
		m := attemptLineRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		id, _ := strconv.ParseInt(m[2], 10, 64)
		n, _ := strconv.Atoi(m[3])
		ja := jobAttempt{hopper.ID(id), n}
		if m[1] == "started" {
			started[ja] = true
		} else {
			finished[ja] = true
		}
	}
	return started, finished
}

// procState returns the state letter of process pid (/proc/PID/stat): 'T'
// when stopped by a signal.
func procState(pid int) byte {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if i := strings.LastIndexByte(string(b), ')'); i >= 0 && i+2 < len(b) {
		return b[i+2]
	}
	return 0
}

// firing is a schedule's job as its firer's log reports it.
type firing struct {
	server *pgServer
	at     time.Time // of the log line
	leads  time.Time // since when that server led (its last "leading maintenance" before)
}

// firings reads which server fired which schedule job, from their logs.
func (cl *pgCluster) firings() map[hopper.ID]firing {
	out := map[hopper.ID]firing{}
	for _, s := range cl.servers {
		var leads time.Time
		for _, l := range s.log.all() {
			switch {
			case strings.Contains(l, `msg="leading maintenance"`):
				leads = lineTime(l)
			case strings.Contains(l, `msg="schedule fired"`):
				if m := firedLineRE.FindStringSubmatch(l); m != nil {
					id, _ := strconv.ParseInt(m[1], 10, 64)
					out[hopper.ID(id)] = firing{s, lineTime(l), leads}
				}
			}
		}
	}
	return out
}

// checkLeaderActions checks, from the servers' logs, that every action of
// the leader's — firing a schedule; every server rescues (decision 95) —
// was taken by the server that began to lead last before it: never by one
// that did not lead, nor by a deposed leader, say after it woke up. It returns the number of
// actions.
func (cl *pgCluster) checkLeaderActions() int {
	cl.t.Helper()
	type start struct {
		at time.Time
		s  *pgServer
	}
	var starts []start
	for _, s := range cl.servers {
		for _, l := range s.log.all() {
			if strings.Contains(l, `msg="leading maintenance"`) {
				starts = append(starts, start{lineTime(l), s})
			}
		}
	}
	slices.SortStableFunc(starts, func(a, b start) int { return a.at.Compare(b.at) })
	n := 0
	for _, s := range cl.servers {
		for _, l := range s.log.all() {
			if !strings.Contains(l, `msg="schedule fired"`) {
				continue
			}
			n++
			at := lineTime(l)
			i, _ := slices.BinarySearchFunc(starts, at, func(e start, t time.Time) int {
				if e.at.After(t) {
					return 1
				}
				return -1
			})
			switch {
			case i == 0:
				cl.t.Errorf("%s acted before any server led: %s", s, l)
			case starts[i-1].s != s:
				cl.t.Errorf("%s acted while %s led (since %s): %s", s, starts[i-1].s, starts[i-1].at.Format(time.StampMilli), l)
			}
		}
	}
	return n
}

// countLines counts s's log lines with every part, at or after since.
func (s *pgServer) countLines(since time.Time, parts ...string) int {
	n := 0
next:
	for _, l := range s.log.all() {
		for _, p := range parts {
			if !strings.Contains(l, p) {
				continue next
			}
		}
		if !lineTime(l).Before(since) {
			n++
		}
	}
	return n
}

// waitLines blocks until s's log has n lines with every part at or after
// since; d only bounds a failing test.
func (s *pgServer) waitLines(t *testing.T, d time.Duration, n int, since time.Time, parts ...string) {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		s.log.mu.Lock()
		changed := s.log.changed
		s.log.mu.Unlock()
		if s.countLines(since, parts...) >= n {
			return
		}
		select {
		case <-changed:
		case <-timer.C:
			t.Fatalf("timed out after %s waiting for %d lines of %s with %q", d, n, s, parts)
		}
	}
}

// recorder is the HTTP server the test's http jobs call: it counts the
// requests by path. The first request for a /hold/ path is held until
// release is closed.
type recorder struct {
	mu       sync.Mutex
	hits     map[string]int // requests by path
	answered map[string]int // responses sent, by path
	jobs     int            // requests to /job/…
	changed  chan struct{}  // closed and replaced at every request and response
	release  chan struct{}
	once     sync.Once
}

func newRecorder(t *testing.T) (*recorder, string) {
	r := &recorder{hits: map[string]int{}, answered: map[string]int{}, changed: make(chan struct{}), release: make(chan struct{})}
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	t.Cleanup(r.releaseHeld) // before Close, which waits for the held requests
	return r, srv.URL
}

func (r *recorder) releaseHeld() { r.once.Do(func() { close(r.release) }) }

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	p := req.URL.Path
	r.mu.Lock()
	r.hits[p]++
	first := r.hits[p] == 1
	if strings.HasPrefix(p, "/job/") {
		r.jobs++
	}
	r.signal()
	r.mu.Unlock()
	if strings.HasPrefix(p, "/hold/") && first {
		select {
		case <-r.release:
		case <-req.Context().Done():
			return
		}
	}
	io.WriteString(w, "ok")
	w.(http.Flusher).Flush() // in the client's socket, even if it is stopped
	r.mu.Lock()
	r.answered[p]++
	r.signal()
	r.mu.Unlock()
}

func (r *recorder) signal() {
	close(r.changed)
	r.changed = make(chan struct{})
}

// until blocks until cond (called with r locked) holds, re-checking at each
// request; d only bounds a failing test.
func (r *recorder) until(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		r.mu.Lock()
		ok, changed := cond(), r.changed
		r.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-changed:
		case <-timer.C:
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
	}
}

func (r *recorder) get(path string) (hits, answered int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.hits[path], r.answered[path]
}

// checkHistory checks the attempt history of a job that reached its final
// state: one record per attempt, numbered from 1, the last one the final
// outcome, every earlier one a failure (failures allowed) or an
// interruption by a worker in lost, the servers that were killed or frozen.
func checkHistory(j *hopper.Job, final string, failures bool, lost map[string]bool) error {
	if len(j.Attempts) != j.Attempt || j.Attempt == 0 {
		return fmt.Errorf("%d attempt records for %d attempts", len(j.Attempts), j.Attempt)
	}
	for i, a := range j.Attempts {
		last := i == len(j.Attempts)-1
		switch {
		case a.Attempt != i+1:
			return fmt.Errorf("record %d is of attempt %d", i+1, a.Attempt)
		case a.Outcome == "interrupted":
			if !lost[a.Worker] {
				return fmt.Errorf("attempt %d interrupted under %s, which was neither killed nor frozen", a.Attempt, a.Worker)
			}
			if a.Error != store.ErrorWorkerLost {
				return fmt.Errorf("attempt %d interrupted with error %q", a.Attempt, a.Error)
			}
			if last && final != "dead" {
				return fmt.Errorf("the last attempt was interrupted, and the job is %s", j.State)
			}
		case last && a.Outcome != final:
			return fmt.Errorf("the last attempt's outcome is %q, want %q", a.Outcome, final)
		case !last && !(failures && a.Outcome == "retrying"):
			return fmt.Errorf("attempt %d: outcome %q before the last attempt", a.Attempt, a.Outcome)
		}
	}
	if j.State.String() != final {
		return fmt.Errorf("state %s, want %s", j.State, final)
	}
	return nil
}

// checkTicks checks the jobs a fixed-rate schedule of period fired: at most
// one per tick; every tick on the schedule's grid; and each tick after the
// first is the first tick after the previous firing — the next tick when
// that firing was on time, or, when it was a late catch-up, the first tick
// after it (missed ticks fire once, not in a burst). A late catch-up, hence
// a gap, is allowed only when no server led while the missed tick came due:
// its firer began to lead after it. It returns the number of gaps.
func checkTicks(t *testing.T, ticks []*hopper.Job, period time.Duration, fired map[hopper.ID]firing) int {
	t.Helper()
	slices.SortFunc(ticks, func(a, b *hopper.Job) int { return a.FireTime.Compare(b.FireTime) })
	gaps := 0
	var late time.Duration
	for i, j := range ticks {
		if i == 0 {
			continue
		}
		prev := ticks[i-1]
		d := j.FireTime.Sub(prev.FireTime)
		switch {
		case d == 0:
			t.Errorf("tick %s fired twice: jobs %d and %d", j.FireTime, prev.ID, j.ID)
			continue
		case d%period != 0:
			t.Errorf("tick %s (job %d) is not on the grid of tick %s (job %d)", j.FireTime, j.ID, prev.FireTime, prev.ID)
		}
		// prev fired at its creation: the next tick is the first after it.
		if prev.CreatedAt.Before(j.FireTime.Add(-period)) || !prev.CreatedAt.Before(j.FireTime) {
			t.Errorf("tick %s (job %d) follows tick %s (job %d), fired at %s: the tick after that firing is not the one that fired",
				j.FireTime, j.ID, prev.FireTime, prev.ID, prev.CreatedAt)
		}
		if d > period {
			gaps++
			f, ok := fired[prev.ID]
			switch {
			case !ok:
				t.Errorf("ticks %s to %s missed after tick %s (job %d, fired at %s): no server's log says which fired it",
					prev.FireTime.Add(period), j.FireTime.Add(-period), prev.FireTime, prev.ID, prev.CreatedAt)
			case f.leads.Before(prev.FireTime.Add(-period / 2)):
				t.Errorf("tick %s (job %d) fired %s late by %s, which led since %s, before it was due: ticks %s to %s missed while a server led",
					prev.FireTime, prev.ID, prev.CreatedAt.Sub(prev.FireTime), f.server, f.leads, prev.FireTime.Add(period), j.FireTime.Add(-period))
			default:
				t.Logf("catch-up: tick %s fired %s late by the new leader %s (leading since %s); ticks up to %s skipped",
					prev.FireTime.Format(time.StampMilli), prev.CreatedAt.Sub(prev.FireTime).Round(time.Millisecond), f.server,
					f.leads.Format(time.StampMilli), j.FireTime.Add(-period).Format(time.StampMilli))
			}
		} else {
			late = max(late, prev.CreatedAt.Sub(prev.FireTime))
		}
	}
	t.Logf("%d ticks of %s, %d catch-ups; on-time ticks fired at most %s late", len(ticks), period, gaps, late.Round(time.Millisecond))
	return gaps
}

// TestPostgresCrashSafety runs three hopper serve processes on one
// PostgreSQL schema while they work thousands of jobs, kills one with
// SIGKILL six times at random moments (the leader twice, at random turns,
// another server at random the other times) and restarts it, and checks:
// no job is lost; a job ran twice only if a kill interrupted it, and every
// attempt in flight at a kill is recorded; a new leader within 15s of the
// leader's death; a recurring schedule fired once per tick, with no gap but
// the catch-up after a leader's death; the dead-letter queue, before and
// during the kills, with its complete histories.
func TestPostgresCrashSafety(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs it for a while; skipped with -short")
	}
	pgtest.ServerURL(t) // skip (or fail under CI) before building anything
	t.Parallel()
	const (
		firstWave  = 600 // http jobs before the first kill
		waveSize   = 400 // http jobs before each kill
		kills      = 6
		total      = firstWave + kills*waveSize
		workers    = 4 // per server
		dlqBefore  = 3 // jobs dead before the kills
		dlqDuring  = kills
		period     = 2 * time.Second
		lease      = 5 * time.Second
		leaderLoss = 15 * time.Second // promised: a new leader within this
	)
	rec, base := newRecorder(t)
	cl := newPGCluster(t, "--lease", lease.String(), "--rescue-interval", "500ms")
	failing := []string{"--max-attempts", "2", "--retry-backoff", "fixed:10ms", "exec", "--", "sh", "-c", "echo doomed >&2; exit 3"}

	// Before the kills: jobs in the dead-letter queue, and a schedule.
	dead := map[hopper.ID]*hopper.Job{}
	for range dlqBefore {
		dead[cl.enqueue(failing...)] = nil
	}
	first := cl.start(workers)
	first.log.until(t, time.Minute, "the failing jobs to die", func(_, d int) bool { return d >= dlqBefore })
	for id := range dead {
		j := cl.job(id)
		if j.State != hopper.StateDead || len(j.Attempts) != 2 {
			t.Fatalf("job %d: %s with %d attempts, want dead after 2", id, j.State, len(j.Attempts))
		}
		dead[id] = j
	}
	cl.run("", "schedule", "add", "tick", "--every", period.String(), "--overlap", "allow", "--priority", "-1",
		"http", "--url", base+"/tick")

	// The jobs, in waves: job N calls /job/N; each wave after the first
	// has a job that fails for good. A wave is enqueued before each kill,
	// so that the servers are busy when it comes.
	nextN := 0
	wave := func(size int, failing bool) {
		var in strings.Builder
		lines := size
		for i := range size {
			if failing && i == size/2 {
				line, _ := json.Marshal(map[string]any{"kind": "exec", "max_attempts": 2, "retry_backoff": "fixed:10ms",
					"args": map[string]any{"command": "sh", "args": []string{"-c", "echo doomed >&2; exit 3"}}})
				in.Write(append(line, '\n'))
				lines++
			}
			line, _ := json.Marshal(map[string]any{"kind": "http", "args": map[string]any{"url": fmt.Sprintf("%s/job/%d", base, nextN)}})
			in.Write(append(line, '\n'))
			nextN++
		}
		if got := strings.TrimSpace(cl.run(in.String(), "enqueue", "--bulk")); got != strconv.Itoa(lines) {
			t.Fatalf("bulk enqueue printed %q, want %d", got, lines)
		}
	}
	wave(firstWave, false)
	start := time.Now()
	cl.start(workers)
	cl.start(workers)

	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, seed>>1))
	t.Logf("seed %d", seed)
	leaderKill := map[int]bool{}
	for _, k := range rng.Perm(kills)[:2] {
		leaderKill[k] = true
	}
	lost := map[string]bool{} // worker IDs of the killed servers
	var killed []*pgServer
	for k := range kills {
		// Kill after a random number of further requests: the leader, or
		// another server.
		wave(waveSize, true)
		rec.mu.Lock()
		target := rec.jobs + 80 + rng.IntN(waveSize-150)
		rec.mu.Unlock()
		rec.until(t, 2*time.Minute, fmt.Sprintf("%d job requests", target), func() bool { return rec.jobs >= target })
		leader, term := cl.liveLeader()
		if leader == nil {
			t.Fatalf("kill %d: no live leader (term %d)", k+1, term)
		}
		victim := leader
		if !leaderKill[k] {
			others := slices.DeleteFunc(cl.live(), func(s *pgServer) bool { return s == leader })
			victim = others[rng.IntN(len(others))]
		}
		at := time.Now()
		cl.kill(victim)
		lost[victim.id], killed = true, append(killed, victim)
		rec.mu.Lock()
		reqs := rec.jobs
		rec.mu.Unlock()
		cl.start(workers)
		if victim != leader {
			t.Logf("kill %d at %d job requests: %s", k+1, reqs, victim)
			continue
		}
		// A new leader within 15s, which fires the tick missed meanwhile
		// at once.
		heir, nterm, took := cl.waitNewLeader(victim.id, term, at, leaderLoss)
		leads := lineTime(heir.log.waitLine(t, 10*time.Second, `msg="leading maintenance"`, fmt.Sprintf("term=%d ", nterm)))
		heir.waitLines(t, 10*time.Second, 1, leads, `msg="schedule fired"`)
		t.Logf("kill %d at %d job requests: %s, the leader (term %d); %s leads in term %d after %s",
			k+1, reqs, victim, term, heir, nterm, took.Round(time.Millisecond))
	}

	// Drain: the jobs of the killed servers are rescued once their leases
	// expire; then the schedule is paused and its last jobs run.
	cl.poll(2*time.Minute, "the jobs to finish", func() bool { return cl.count(pgUnfinished+` AND schedule IS NULL`) == 0 })
	took := time.Since(start)
	// Enough ticks to judge the schedule by, however fast the jobs went
	// (two deaths of the leader take ~20 s without one).
	cl.poll(time.Minute, "5 ticks", func() bool { return cl.count(`schedule IS NOT NULL`) >= 5 })
	cl.run("", "schedule", "pause", "tick")
	cl.poll(time.Minute, "the schedule's jobs to finish", func() bool { return cl.count(pgUnfinished) == 0 })
	leader, term := cl.liveLeader()
	if leader == nil {
		t.Errorf("no live leader at the end (term %d)", term)
	}
	cl.stopAll()

	// Every job ran and completed; a job ran twice only when a kill
	// interrupted it.
	var ticks []*hopper.Job
	byN := map[int]*hopper.Job{}
	var dlq []*hopper.Job
	for _, j := range cl.allJobs() {
		var a struct{ URL string }
		json.Unmarshal(j.Args, &a)
		switch {
		case j.Schedule == "tick":
			ticks = append(ticks, j)
		case j.Kind == "http":
			n, err := strconv.Atoi(strings.TrimPrefix(a.URL, base+"/job/"))
			if err != nil || byN[n] != nil {
				t.Fatalf("job %d: unexpected url %q", j.ID, a.URL)
			}
			byN[n] = j
		case j.Kind == "exec":
			dlq = append(dlq, j)
		default:
			t.Errorf("unexpected job %+v", j)
		}
	}
	if len(byN) != total || len(dlq) != dlqBefore+dlqDuring {
		t.Fatalf("found %d of the %d http jobs and %d of the %d failing ones", len(byN), total, len(dlq), dlqBefore+dlqDuring)
	}
	var missing, dups []int
	interrupted := 0
	for n := range total {
		j := byN[n]
		hits, _ := rec.get(fmt.Sprintf("/job/%d", n))
		if err := checkHistory(j, "completed", false, lost); err != nil {
			t.Errorf("job %d (N=%d, %d requests): %v; attempts %+v", j.ID, n, hits, err, j.Attempts)
		}
		if len(j.Attempts) > 1 {
			interrupted++
		}
		switch {
		case hits == 0:
			missing = append(missing, n)
		case hits > len(j.Attempts):
			t.Errorf("job %d (N=%d): %d requests for %d attempts", j.ID, n, hits, len(j.Attempts))
		}
		for range hits - 1 {
			dups = append(dups, n)
		}
	}
	if len(missing) > 0 {
		t.Errorf("%d jobs never ran, e.g. %v", len(missing), missing[:min(10, len(missing))])
	}
	if len(dups) > len(killed)*workers {
		t.Errorf("%d duplicate runs, more than kills × workers = %d", len(dups), len(killed)*workers)
	}

	// Every attempt in flight at a kill is in its job's history (as an
	// interrupted attempt, or as the outcome the server wrote just before
	// it died), and no attempt a killed server saw finish is recorded as
	// interrupted.
	jobs := map[hopper.ID]*hopper.Job{}
	for _, j := range byN {
		jobs[j.ID] = j
	}
	for _, j := range append(slices.Clone(dlq), ticks...) {
		jobs[j.ID] = j
	}
	inFlight, unlogged := 0, 0 // attempts in flight at a kill; those claimed but not yet logged started
	for _, s := range killed {
		started, finished := s.attempts()
		for ja := range started {
			if finished[ja] {
				continue
			}
			inFlight++
			j := jobs[ja.job]
			if j == nil || ja.attempt > len(j.Attempts) || j.Attempts[ja.attempt-1].Worker != s.id {
				t.Errorf("%s was running attempt %d of job %d when killed, and its history does not have it: %+v", s, ja.attempt, ja.job, j)
			}
		}
		for _, j := range jobs {
			for _, a := range j.Attempts {
				if a.Worker == s.id && a.Outcome == "interrupted" && finished[jobAttempt{j.ID, a.Attempt}] {
					t.Errorf("job %d: attempt %d is recorded interrupted, but %s logged its end", j.ID, a.Attempt, s)
				}
				if a.Worker == s.id && !started[jobAttempt{j.ID, a.Attempt}] {
					unlogged++
				}
			}
		}
	}

	// The dead-letter queue: the jobs dead before the kills are unchanged,
	// and every failing job is dead with one record per attempt.
	var listed []*hopper.Job
	cl.json(&listed, "dlq", "list", "--limit", "1000")
	if len(listed) != dlqBefore+dlqDuring {
		t.Errorf("the dead-letter queue has %d jobs, want %d", len(listed), dlqBefore+dlqDuring)
	}
	for _, j := range listed {
		if j.Kind != "exec" {
			t.Errorf("job %d (%s) is dead: %s; attempts %+v", j.ID, j.Kind, j.LastError, j.Attempts)
			continue
		}
		if err := checkHistory(j, "dead", true, lost); err != nil || j.Attempt != 2 || j.LastError == "" {
			t.Errorf("dead job %d: %v; attempt %d/%d, last error %q, attempts %+v", j.ID, err, j.Attempt, j.MaxAttempts, j.LastError, j.Attempts)
		}
		if before := dead[j.ID]; before != nil {
			if after := cl.job(j.ID); !reflect.DeepEqual(before, after) {
				t.Errorf("dead job %d changed:\nbefore %+v\nafter  %+v", j.ID, before, after)
			}
		}
	}
	for id := range dead {
		if !slices.ContainsFunc(listed, func(j *hopper.Job) bool { return j.ID == id }) {
			t.Errorf("dead job %d is no longer in the dead-letter queue", id)
		}
	}

	// The schedule: once per tick, every job completed.
	for _, j := range ticks {
		if err := checkHistory(j, "completed", false, lost); err != nil {
			t.Errorf("tick %s (job %d): %v; attempts %+v", j.FireTime, j.ID, err, j.Attempts)
		}
	}
	actions := cl.checkLeaderActions()
	if gaps := checkTicks(t, ticks, period, cl.firings()); gaps > len(leaderKill) {
		t.Errorf("%d gaps in the ticks for %d deaths of the leader", gaps, len(leaderKill))
	}
	if hits, _ := rec.get("/tick"); hits < len(ticks) || hits > len(ticks)+len(killed)*workers {
		t.Errorf("%d requests of the schedule's %d jobs", hits, len(ticks))
	}
	if len(ticks) < 5 {
		t.Errorf("only %d ticks fired", len(ticks))
	}
	t.Logf("%d jobs in %s on %d servers × %d workers: %d kills (%d of the leader), %d attempts in flight at a kill (%d more not yet logged started), %d duplicate runs, %d jobs with an interrupted attempt, %d ticks, %d actions of the leaders",
		total, took.Round(time.Millisecond), 3, workers, len(killed), len(leaderKill), inFlight, unlogged, len(dups), interrupted, len(ticks), actions)
}

// TestPostgresFrozenServer stops the leader with SIGSTOP while it runs
// jobs, past the leases of its jobs and of its leadership: another server
// takes the lead within 15s, rescues the jobs and runs them to completion;
// then the frozen server gets its first attempts' responses and SIGCONT. Its
// late outcomes change nothing (it learns its leases were lost), and as a
// deposed leader it fires no tick and rescues nothing: the schedule still
// fired once per tick.
func TestPostgresFrozenServer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs it for a while; skipped with -short")
	}
	pgtest.ServerURL(t) // skip (or fail under CI) before building anything
	t.Parallel()
	const (
		holds      = 3
		period     = 2 * time.Second
		leaderLoss = 15 * time.Second
	)
	rec, base := newRecorder(t)
	cl := newPGCluster(t, "--lease", "5s", "--rescue-interval", "500ms")
	cl.run("", "schedule", "add", "tick", "--every", period.String(), "--overlap", "allow", "--priority", "-1",
		"http", "--url", base+"/tick")
	var held []hopper.ID
	for i := range holds {
		held = append(held, cl.enqueue("--max-attempts", "5", "http", "--url", fmt.Sprintf("%s/hold/%d", base, i)))
	}

	// A runs the held jobs, which wait for their responses, and leads.
	a := cl.start(holds + 2)
	rec.until(t, time.Minute, "the held jobs' first requests", func() bool {
		for i := range holds {
			if rec.hits[fmt.Sprintf("/hold/%d", i)] == 0 {
				return false
			}
		}
		return true
	})
	a.log.waitLine(t, time.Minute, `msg="schedule fired"`)
	cl.start(4)
	cl.start(4)
	leader, term := cl.liveLeader()
	if leader != a {
		t.Fatalf("the leader is %v (term %d), want %s", leader, term, a)
	}
	for _, id := range held {
		if j := cl.job(id); j.State != hopper.StateRunning || j.Worker != a.id {
			t.Fatalf("held job %d: %s by %q, want running by %s", id, j.State, j.Worker, a)
		}
	}

	stopAt := time.Now()
	if err := syscall.Kill(a.pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	cl.poll(10*time.Second, a.String()+" to stop", func() bool { return procState(a.pid) == 'T' })
	stoppedAt := time.Now() // A's log lines stamped after this were made after it woke up
	next, nterm, took := cl.waitNewLeader(a.id, term, stopAt, leaderLoss)
	t.Logf("%s frozen; %s leads in term %d after %s", a, next, nterm, took.Round(time.Millisecond))
	var ids []string
	for _, id := range held {
		ids = append(ids, strconv.FormatInt(int64(id), 10))
	}
	cl.poll(time.Minute, "the held jobs to complete on another server", func() bool {
		return cl.count(`state = 'completed' AND id IN (`+strings.Join(ids, ", ")+`)`) == holds
	})
	done := map[hopper.ID]*hopper.Job{}
	for _, id := range held {
		done[id] = cl.job(id)
	}
	// The frozen server's first attempts get their responses now (they sit
	// in its sockets), then it wakes.
	rec.releaseHeld()
	rec.until(t, time.Minute, "the held first requests to be answered", func() bool {
		for i := range holds {
			if rec.answered[fmt.Sprintf("/hold/%d", i)] < 2 {
				return false
			}
		}
		return true
	})
	contAt := time.Now()
	if err := syscall.Kill(a.pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	for _, id := range held {
		l := a.log.waitLine(t, time.Minute, `msg="job lease lost`, fmt.Sprintf("job=%d ", id))
		t.Logf("woken: %s", l)
	}
	// Two ticks fired by the new leader while the old one is awake.
	next.waitLines(t, time.Minute, 2, contAt, `msg="schedule fired"`)
	if h, tm, live := cl.leader(); h != next.id || tm != nterm || !live {
		t.Errorf("after the wake-up the leaders table says %s in term %d (running %v), want %s in term %d", h, tm, live, next, nterm)
	}
	cl.run("", "schedule", "pause", "tick")
	cl.poll(time.Minute, "the schedule's jobs to finish", func() bool { return cl.count(pgUnfinished) == 0 })
	cl.stopAll()

	// The late outcomes changed nothing.
	for i, id := range held {
		j := cl.job(id)
		if !reflect.DeepEqual(j, done[id]) {
			t.Errorf("held job %d changed after the wake-up:\nbefore %+v\nafter  %+v", id, done[id], j)
		}
		if err := checkHistory(j, "completed", false, map[string]bool{a.id: true}); err != nil || j.Attempt != 2 ||
			j.Attempts[0].Worker != a.id || j.Attempts[0].Outcome != "interrupted" || j.Attempts[1].Worker == a.id {
			t.Errorf("held job %d: %v; want attempt 1 interrupted under %s, attempt 2 completed elsewhere: %+v", id, err, a, j.Attempts)
		}
		if hits, _ := rec.get(fmt.Sprintf("/hold/%d", i)); hits != 2 {
			t.Errorf("held job %d: %d requests, want 2", id, hits)
		}
		if l, _ := a.log.find(`msg="job completed"`, fmt.Sprintf("job=%d ", id)); l != "" {
			t.Errorf("the frozen server reported held job %d completed: %s", id, l)
		}
	}
	// The deposed leader did nothing a leader does once it was frozen (a
	// rescue is every server's, a compare-and-set on expired leases).
	for _, what := range []string{`msg="schedule fired"`, `msg="leading maintenance"`, `msg="schedule tick skipped`} {
		if n := a.countLines(stoppedAt, what); n > 0 {
			t.Errorf("the frozen leader logged %d lines with %s after it was frozen", n, what)
		}
	}
	var ticks []*hopper.Job
	for _, j := range cl.allJobs() {
		if j.Schedule == "tick" {
			ticks = append(ticks, j)
			if err := checkHistory(j, "completed", false, map[string]bool{a.id: true}); err != nil {
				t.Errorf("tick %s (job %d): %v; attempts %+v", j.FireTime, j.ID, err, j.Attempts)
			}
		}
	}
	t.Logf("%d actions of the leaders", cl.checkLeaderActions())
	if gaps := checkTicks(t, ticks, period, cl.firings()); gaps > 1 {
		t.Errorf("%d gaps in the ticks for one change of leader", gaps)
	}
}
