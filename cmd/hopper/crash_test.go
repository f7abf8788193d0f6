package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/kinds"
)

// bin is the hopper command, built once for the tests of the package
// (TestMain removes it).
var bin struct {
	once      sync.Once
	dir, path string
	err       error
}

// hopperBin builds the hopper command, once, and returns its path.
func hopperBin(t *testing.T) string {
	t.Helper()
	bin.once.Do(func() {
		goTool, err := exec.LookPath("go") // go test puts its own toolchain first on PATH
		if err != nil {
			bin.err = fmt.Errorf("no go tool on PATH: %v", err)
			return
		}
		if bin.dir, bin.err = os.MkdirTemp("", "hopper-test-bin-"); bin.err != nil {
			return
		}
		bin.path = filepath.Join(bin.dir, "hopper")
		if out, err := exec.Command(goTool, "build", "-o", bin.path, ".").CombinedOutput(); err != nil {
			bin.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if bin.err != nil {
		t.Fatal(bin.err)
	}
	return bin.path
}

// hop runs the hopper binary on one database.
type hop struct {
	t       *testing.T
	bin, db string
	logs    string // directory of the servers' logs
	servers int
	env     []string   // added to the environment of the commands it runs
	files   []*os.File // given to serve as descriptors 3, 4, … (cmd.ExtraFiles), as a shell or a service manager may
	tee     *watcher   // if set, also gets every whole line of every server's log, as it arrives
}

// newHop returns a hop on the SQLite file hopper.db in dir, with its
// servers' logs in dir/logs.
func newHop(t *testing.T, dir string) *hop {
	t.Helper()
	c := &hop{t: t, bin: hopperBin(t), db: filepath.Join(dir, "hopper.db"), logs: filepath.Join(dir, "logs")}
	if err := os.Mkdir(c.logs, 0o755); err != nil {
		t.Fatal(err)
	}
	return c
}

// run runs hopper with args and returns its stdout; it fails the test on
// a non-zero exit.
func (c *hop) run(stdin string, args ...string) string {
	c.t.Helper()
	out, errOut, err := c.try(stdin, args...)
	if err != nil {
		c.t.Fatalf("hopper %s: %v\nstderr: %s", strings.Join(args, " "), err, errOut)
	}
	return out
}

// try runs hopper with args and returns its stdout, its stderr and how it
// exited.
func (c *hop) try(stdin string, args ...string) (stdout, stderr string, err error) {
	cmd := exec.Command(c.bin, append([]string{"--db", c.db}, args...)...)
	cmd.Env = append(os.Environ(), c.env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

func (c *hop) json(v any, args ...string) {
	c.t.Helper()
	out := c.run("", append(args, "--json")...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		c.t.Fatalf("hopper %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func (c *hop) job(id hopper.ID) *hopper.Job {
	c.t.Helper()
	var j hopper.Job
	c.json(&j, "jobs", "get", strconv.FormatInt(int64(id), 10))
	return &j
}

type stats struct {
	Waiting, Running int
	Totals           map[string]int
}

func (c *hop) stats() stats {
	c.t.Helper()
	var s stats
	c.json(&s, "stats")
	return s
}

// server is a running hopper serve child process and what its log says.
type server struct {
	cmd *exec.Cmd
	log *watcher
}

// serve starts hopper serve as a child process, logging every transition
// (debug level) through a watcher; flags are added to its command line.
func (c *hop) serve(workers int, flags ...string) *server {
	c.t.Helper()
	c.servers++
	log, err := os.Create(filepath.Join(c.logs, fmt.Sprintf("serve-%d.log", c.servers)))
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { log.Close() })
	w := newWatcher(log)
	w.tee = c.tee
	cmd := exec.Command(c.bin, append([]string{"--db", c.db, "serve", "--workers", strconv.Itoa(workers), "--log-level", "debug"}, flags...)...)
	cmd.Env = append(os.Environ(), c.env...)
	cmd.Stdout, cmd.Stderr = log, w
	cmd.ExtraFiles = c.files
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	return &server{cmd: cmd, log: w}
}

// stop stops a server gracefully and checks that it exited cleanly.
func (c *hop) stop(s *server) {
	c.t.Helper()
	s.cmd.Process.Signal(syscall.SIGTERM)
	if err := s.cmd.Wait(); err != nil {
		c.t.Fatalf("serve exited with %v; logs in %s", err, c.logs)
	}
}

// watcher is the stderr of a server: it copies the log to a file, keeps its
// lines and counts the transitions it reports, waking those who wait for
// them. Tests block on these log lines rather than polling the database.
type watcher struct {
	mu              sync.Mutex
	out             io.Writer
	partial         []byte
	lines           []string
	completed, dead int
	changed         chan struct{} // closed and replaced at every line
	tee             *watcher      // if set, also gets each whole line: one view of several processes' logs
}

func newWatcher(out io.Writer) *watcher {
	return &watcher{out: out, changed: make(chan struct{})}
}

// Write implements io.Writer (exec copies the child's stderr into it).
func (w *watcher) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.out.Write(p)
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		line := string(w.partial[:i])
		w.partial = w.partial[i+1:]
		w.lines = append(w.lines, line)
		switch {
		case strings.Contains(line, `msg="job completed"`):
			w.completed++
		case strings.Contains(line, `msg="job dead"`):
			w.dead++
		}
		close(w.changed)
		w.changed = make(chan struct{})
		if w.tee != nil {
			w.tee.Write([]byte(line + "\n"))
		}
	}
	return len(p), nil
}

// until blocks until cond holds for the counts of transitions seen so far,
// re-checking at each log line; d only bounds a failing test.
func (w *watcher) until(t *testing.T, d time.Duration, what string, cond func(completed, dead int) bool) {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		w.mu.Lock()
		ok, changed := cond(w.completed, w.dead), w.changed
		w.mu.Unlock()
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

// waitLine blocks until the log has a line containing every part, and
// returns it; d only bounds a failing test.
func (w *watcher) waitLine(t *testing.T, d time.Duration, parts ...string) string {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		line, changed := w.find(parts...)
		if line != "" {
			return line
		}
		select {
		case <-changed:
		case <-timer.C:
			t.Fatalf("timed out after %s waiting for a log line with %q", d, parts)
		}
	}
}

// all returns the lines seen so far.
func (w *watcher) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.lines...)
}

// find returns the first line seen so far containing every part ("" if
// none), and a channel closed at the next line.
func (w *watcher) find(parts ...string) (string, <-chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
next:
	for _, l := range w.lines {
		for _, p := range parts {
			if !strings.Contains(l, p) {
				continue next
			}
		}
		return l, w.changed
	}
	return "", w.changed
}

// lines counts the lines of file (0 if it does not exist yet).
func lines(file string) int {
	b, _ := os.ReadFile(file)
	return bytes.Count(b, []byte("\n"))
}

// TestCrashSafety kills hopper serve with SIGKILL at random moments while it
// works 2,000 jobs, restarts it each time, and checks that no job is lost,
// that jobs ran twice only when a kill interrupted them, and that the
// dead-letter queue and the schedules survive.
func TestCrashSafety(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs it for a while; skipped with -short")
	}
	const (
		total   = 2000
		workers = 8
		kills   = 5
	)
	t.Parallel()
	dir := t.TempDir()
	c := newHop(t, dir)
	outFile := filepath.Join(dir, "out.txt")

	// Before the kills: a job in the dead-letter queue and a schedule.
	deadID, _ := strconv.ParseInt(strings.TrimSpace(c.run("", "enqueue", "--max-attempts", "2", "--retry-backoff", "fixed:10ms",
		"exec", "--", "sh", "-c", "echo doomed >&2; exit 3")), 10, 64)
	srv := c.serve(2)
	srv.log.until(t, 30*time.Second, "the failing job to die", func(_, dead int) bool { return dead >= 1 })
	c.stop(srv)
	deadBefore := c.job(hopper.ID(deadID))
	if len(deadBefore.Attempts) != 2 {
		t.Fatalf("dead job has %d attempts", len(deadBefore.Attempts))
	}
	c.run("", "schedule", "add", "daily-report", "--every", "24h", "exec", "--", "echo", "report")

	// The jobs: job N appends N to the output file.
	var in strings.Builder
	for n := range total {
		a := kinds.ExecArgs{Command: "sh", Args: []string{"-c", fmt.Sprintf("echo %d >> %s", n, outFile)}}
		line, _ := json.Marshal(map[string]any{"kind": "exec", "args": a})
		in.Write(append(line, '\n'))
	}
	if got := strings.TrimSpace(c.run(in.String(), "enqueue", "--bulk")); got != strconv.Itoa(total) {
		t.Fatalf("bulk enqueue printed %q", got)
	}

	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, seed>>1))
	t.Logf("seed %d", seed)
	killed := 0
	for killed < kills {
		srv := c.serve(workers)
		target := 30 + rng.IntN(350)
		srv.log.until(t, 60*time.Second, fmt.Sprintf("%d jobs completed", target), func(completed, _ int) bool {
			return completed >= target
		})
		if err := srv.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		srv.cmd.Wait()
		killed++
		t.Logf("kill %d at %d lines of output", killed, lines(outFile))
	}

	// Drain: the last server completes every job still waiting or running
	// (those of killed servers are rescued when it opens the file).
	left := c.stats()
	srv = c.serve(workers)
	// The bound only ends a failing test: under CI, beside the PostgreSQL
	// crash tests, an exec job can take a second of this 2-core machine.
	srv.log.until(t, 5*time.Minute, "the jobs to drain", func(completed, _ int) bool {
		return completed >= left.Waiting+left.Running
	})
	c.stop(srv)
	if s := c.stats(); s.Waiting != 0 || s.Running != 0 {
		t.Fatalf("after the drain: %d waiting, %d running", s.Waiting, s.Running)
	}

	// Every job ran; duplicates only for jobs interrupted by a kill.
	counts := make([]int, total)
	b, _ := os.ReadFile(outFile)
	for _, f := range strings.Fields(string(b)) {
		n, err := strconv.Atoi(f)
		if err != nil || n < 0 || n >= total {
			t.Fatalf("bad output line %q", f)
		}
		counts[n]++
	}
	var missing, dups []int
	for n, k := range counts {
		if k == 0 {
			missing = append(missing, n)
		}
		for range k - 1 {
			dups = append(dups, n)
		}
	}
	if len(missing) > 0 {
		t.Errorf("%d jobs never ran, e.g. %v", len(missing), missing[:min(10, len(missing))])
	}
	if len(dups) > killed*workers {
		t.Errorf("%d duplicate runs, more than kills × workers = %d", len(dups), killed*workers)
	}
	var jobs []*hopper.Job
	c.json(&jobs, "jobs", "list", "--kind", "exec", "--limit", "10000")
	re := regexp.MustCompile(`^echo (\d+) >> `)
	byN := map[int]*hopper.Job{}
	interrupted := 0
	for _, j := range jobs {
		var a kinds.ExecArgs
		json.Unmarshal(j.Args, &a)
		if len(a.Args) == 2 {
			if m := re.FindStringSubmatch(a.Args[1]); m != nil {
				n, _ := strconv.Atoi(m[1])
				byN[n] = j
			}
		}
		for _, at := range j.Attempts {
			if at.Outcome == "interrupted" {
				interrupted++
				break
			}
		}
	}
	if len(byN) != total {
		t.Fatalf("found %d of the %d jobs", len(byN), total)
	}
	for _, n := range dups {
		j := byN[n]
		wasInterrupted := false
		for _, at := range j.Attempts {
			wasInterrupted = wasInterrupted || at.Outcome == "interrupted"
		}
		if !wasInterrupted {
			t.Errorf("job %d (N=%d) ran twice but no kill interrupted it: attempts %+v", j.ID, n, j.Attempts)
		}
	}
	s := c.stats()
	if s.Totals["completed"] != total || s.Totals["dead"] != 1 {
		t.Errorf("completed %d (want %d), dead %d (want 1): %+v", s.Totals["completed"], total, s.Totals["dead"], s.Totals)
	}

	// The dead-letter queue and the schedule are intact.
	deadAfter := c.job(hopper.ID(deadID))
	if deadAfter.State != hopper.StateDead || !reflect.DeepEqual(deadAfter.Attempts, deadBefore.Attempts) || deadAfter.LastError != deadBefore.LastError {
		t.Errorf("the dead job changed:\nbefore %+v\nafter  %+v", deadBefore, deadAfter)
	}
	var scheds []*hopper.Schedule
	c.json(&scheds, "schedule", "list")
	if len(scheds) != 1 || scheds[0].Name != "daily-report" || scheds[0].Paused {
		t.Errorf("schedules after the kills: %+v", scheds)
	}
	t.Logf("%d jobs, %d workers: %d kills, %d duplicate runs (bound %d), %d jobs with an interrupted attempt, %d output lines",
		total, workers, killed, len(dups), killed*workers, interrupted, lines(outFile))
	if t.Failed() {
		t.Logf("server logs in %s", c.logs)
	}
}
