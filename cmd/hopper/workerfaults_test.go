//go:build unix

package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/internal/pgtest"
)

// partitionProxy forwards TCP connections from a loopback address to a
// server until cut: then it stops forwarding, both ways, holding what it
// has read (as a network that drops every packet while the peers' TCP
// stacks keep retrying), and forwards it all once healed. Connections
// survive a partition; requests sent during it arrive late.
type partitionProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	healed chan struct{} // closed while the network works
}

func newPartitionProxy(t *testing.T, target string) *partitionProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &partitionProxy{ln: ln, target: target, healed: make(chan struct{})}
	close(p.healed)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.serve(c)
		}
	}()
	return p
}

func (p *partitionProxy) url() string { return "http://" + p.ln.Addr().String() }

// cut stops the forwarding; heal resumes it.
func (p *partitionProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.healed = make(chan struct{})
}

func (p *partitionProxy) heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	close(p.healed)
}

// gate blocks while the network is cut.
func (p *partitionProxy) gate() {
	p.mu.Lock()
	h := p.healed
	p.mu.Unlock()
	<-h
}

func (p *partitionProxy) serve(c net.Conn) {
	defer c.Close()
	p.gate()
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer s.Close()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				p.gate()
				if _, werr := dst.Write(buf[:n]); werr != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		if tc, ok := dst.(*net.TCPConn); ok {
			tc.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(s, c)
	go pipe(c, s)
	<-done
	<-done
}

var refusedLineRE = regexp.MustCompile(`msg="remote outcome refused: lease lost" .*jobs="?\[([0-9 ]*)\]`)

// TestWorkerFencingUnderFaults runs jobs on reference-client worker
// processes (Python) that each reach hopper serve through a loopback proxy
// of the test's, while it kills workers with kill -9 and cuts one
// worker's network for longer than a lease: every job completes exactly
// once (no double completion, none lost), every job rescued is leased
// again within a lease and a rescue interval, and the partitioned
// worker's late outcomes are refused (409) and logged. CI runs 1,000 jobs,
// 2 kills and 1 partition; HOPPER_FAULTS_FULL=1 runs the 10,000
// jobs, 5 kills and 2 partitions.
func TestWorkerFencingUnderFaults(t *testing.T) {
	t.Parallel()
	interp := clients[0].need(t)
	h, s := serveWorkers(t)
	testWorkerFencing(t, interp, h, []*apiServer{s}, s.log)
}

// TestPostgresWorkerFencingUnderFaults is TestWorkerFencingUnderFaults
// with three hopper serve processes on one PostgreSQL schema, each worker
// (and each replacement of a killed one) reaching the next of them in
// turn: a worker stays with the server it registered with (its remote key
// is that process's), and the fencing holds across the servers, the
// rescues made by whichever leads the maintenance.
func TestPostgresWorkerFencingUnderFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs it; skipped with -short")
	}
	pgtest.ServerURL(t)
	t.Parallel()
	interp := clients[0].need(t)
	h := newHop(t, keptDir(t, "hopper-pgfaults-"))
	h.db = pgtest.StoreURL(t, 5)
	h.env = []string{workerTokens}
	h.tee = newWatcher(io.Discard) // the three servers' logs as one
	h.run("", "migrate")
	servers := make([]*apiServer, 3)
	for i := range servers {
		servers[i] = h.serveWorkers()
	}
	testWorkerFencing(t, interp, h, servers, h.tee)
}

// testWorkerFencing is the body of the fencing tests: the workers reach
// servers in turn, and log is the servers' log (every transition of the
// jobs, whichever server made it).
func testWorkerFencing(t *testing.T, interp string, h *hop, servers []*apiServer, log *watcher) {
	py := clients[0]
	jobs, kills, partitions := 1000, 2, 1
	if os.Getenv("HOPPER_FAULTS_FULL") != "" {
		jobs, kills, partitions = 10_000, 5, 2
	}
	const lease, rescue = 2 * time.Second, 500 * time.Millisecond // serveWorkers' flags
	// rescueSlack is what a loaded machine (CI's, or 6 builds on 2 cores)
	// may add to the rescuer's tick and the log line's time.
	const rescueSlack = time.Second
	s := servers[0]
	for i := 0; i < jobs; i += 1000 {
		var b strings.Builder
		b.WriteString(`{"jobs":[`)
		for k := i; k < min(i+1000, jobs); k++ {
			if k > i {
				b.WriteByte(',')
			}
			b.WriteString(`{"kind":"slow","args":{"seconds":0.1},"max_attempts":25}`)
		}
		b.WriteString(`]}`)
		must(t, s, wAdmin, "POST", "/api/v1/jobs/batch", b.String(), http.StatusCreated, nil)
	}
	// Three workers, each behind a proxy of its own.
	const nWorkers = 3
	proxies := make([]*partitionProxy, nWorkers)
	cmds := make([]*exec.Cmd, nWorkers)
	outs := make([]*watcher, nWorkers)
	started := 0
	// startWorker starts worker i, with a proxy of its own to the next
	// server in turn, the one it stays with.
	startWorker := func(i int) {
		to := servers[started%len(servers)]
		started++
		proxies[i] = newPartitionProxy(t, strings.TrimPrefix(to.url, "http://"))
		cmds[i], outs[i] = py.start(t, interp, &apiServer{server: to.server, url: proxies[i].url()}, h.logs, started)
	}
	for i := range proxies {
		startWorker(i)
	}
	// The faults, kills and partitions interleaved (kill, partition,
	// kill, … for CI), each once a further share of the jobs has
	// completed.
	var faults []bool // true: a kill
	for kl, pl := kills, partitions; kl+pl > 0; {
		kill := kl > pl
		faults = append(faults, kill)
		if kill {
			kl--
		} else {
			pl--
		}
	}
	var partitioned []*watcher // the output of each partitioned worker (a later kill replaces outs[i])
	var faultAt []time.Time    // when each fault began
	for k, kill := range faults {
		at := jobs * (k + 1) / (len(faults) + 2)
		log.until(t, 5*time.Minute, fmt.Sprintf("%d jobs completed", at), func(c, _ int) bool { return c >= at })
		i := k % nWorkers
		faultAt = append(faultAt, time.Now())
		if kill {
			cmds[i].Process.Kill() // SIGKILL
			cmds[i].Wait()
			startWorker(i)
			continue
		}
		// Cut the network as one of its handlers starts: the handler
		// ends 100 ms later and sends its outcome into the cut. The cut
		// lasts a lease and two rescue intervals, and then until the
		// server holds no lease of the worker's (each rescued, or ended
		// by an outcome that got through before the cut): its jobs run
		// elsewhere. Then heal, and its late outcomes arrive.
		partitioned = append(partitioned, outs[i])
		wid := workerID(t, outs[i])
		starts := countLines(outs[i], "started slow job")
		waitFor(t, outs[i], "a job started on the worker to cut", func() bool { return countLines(outs[i], "started slow job") > starts })
		proxies[i].cut()
		time.Sleep(lease + 2*rescue)
		waitFor(t, log, "the server to hold no lease of the partitioned worker", func() bool { return heldBy(log, wid) == 0 })
		proxies[i].heal()
	}
	log.until(t, 5*time.Minute, "every job completed", func(c, _ int) bool { return c >= jobs })

	// The log of every transition, read once.
	lines := log.all()
	completed := map[hopper.ID]int{}
	rescuedAt := map[hopper.ID]time.Time{}
	var slowRescues []string
	var release time.Duration // the longest from a rescue to the next lease
	refused := 0
	for _, l := range lines {
		if m := refusedLineRE.FindStringSubmatch(l); m != nil {
			refused += len(strings.Fields(m[1]))
			continue
		}
		m := attemptLineRE.FindStringSubmatch(l)
		if m == nil {
			if strings.Contains(l, `msg="job dead"`) {
				t.Errorf("a job died: %s", l)
			}
			continue
		}
		id64, _ := strconv.ParseInt(m[2], 10, 64)
		id := hopper.ID(id64)
		switch m[1] {
		case "completed":
			completed[id]++
		case "rescued":
			at := lineTime(l)
			rescuedAt[id] = at
			// The fault that lost it: the latest before. Its worker's
			// last renewal came before the fault, so its lease expired
			// within a lease of it, and the rescuer ran within an
			// interval after that.
			var fault time.Time
			for _, f := range faultAt {
				if f.Before(at) {
					fault = f
				}
			}
			if d := at.Sub(fault); fault.IsZero() || d > lease+rescue+rescueSlack {
				slowRescues = append(slowRescues, fmt.Sprintf("job %d rescued %s after the fault before it (%v)", id, d, fault))
			}
		case "started":
			if at, ok := rescuedAt[id]; ok {
				release = max(release, lineTime(l).Sub(at))
				delete(rescuedAt, id)
			}
		}
	}
	doubles := 0
	for id, n := range completed {
		if n > 1 {
			doubles++
			t.Errorf("job %d completed %d times", id, n)
		}
	}
	if len(completed) != jobs {
		t.Errorf("%d jobs completed, want %d (lost: %d)", len(completed), jobs, jobs-len(completed))
	}
	for id := range rescuedAt {
		slowRescues = append(slowRescues, fmt.Sprintf("job %d rescued and never leased again", id))
	}
	if len(slowRescues) > 0 {
		t.Errorf("rescued jobs not available again within a lease and a rescue interval of their worker's loss (%s, +%s for a loaded machine), or never leased again:\n%s",
			lease+rescue, rescueSlack, strings.Join(slowRescues, "\n"))
	}
	// The partitioned workers' late outcomes were sent at the heal, long
	// before the last jobs completed: their 409s are in.
	clientRefusals := 0
	for k, out := range partitioned {
		n := countLines(out, "lease lost, outcome refused")
		t.Logf("partition %d: its worker had %d outcomes refused (409)", k+1, n)
		clientRefusals += n
	}
	if refused == 0 || clientRefusals == 0 || clientRefusals > refused {
		t.Errorf("late outcomes: the server logged %d refusals, the partitioned workers %d 409s; want some, each logged by the server", refused, clientRefusals)
	}
	st := getStats(t, s)
	t.Logf("%d jobs, %d kills, %d partitions: %d completed once, %d double completions, %d outcomes refused (409), %d workers started; "+
		"longest from a rescue to the next lease %s (a rescued job waits behind the backlog: its run-at is the rescue's); stats %v",
		jobs, len(faults)-len(partitioned), len(partitioned), len(completed), doubles, refused, started, release.Round(time.Millisecond), st)
}

// getStats returns the server's job counts by state.
func getStats(t *testing.T, s *apiServer) map[string]any {
	t.Helper()
	var st map[string]any
	must(t, s, wAdmin, "GET", "/api/v1/stats", "", http.StatusOK, &st)
	return st
}

// countLines counts the lines of w that hold s.
func countLines(w *watcher, s string) int {
	n := 0
	for _, l := range w.all() {
		if strings.Contains(l, s) {
			n++
		}
	}
	return n
}

// workerID is the ID a reference client logged it registered as.
func workerID(t *testing.T, w *watcher) string {
	t.Helper()
	line := w.waitLine(t, time.Minute, "registered as remote:")
	id, _, _ := strings.Cut(line[strings.Index(line, "remote:"):], " ")
	return id
}

// heldBy counts the jobs whose latest transition in the server's log is a
// start by worker: the leases it holds.
func heldBy(log *watcher, worker string) int {
	held := map[string]bool{}
	for _, l := range log.all() {
		m := attemptLineRE.FindStringSubmatch(l)
		switch {
		case m == nil:
		case m[1] == "started" && strings.Contains(l, " worker="+worker):
			held[m[2]] = true
		default:
			delete(held, m[2])
		}
	}
	return len(held)
}

// waitFor blocks until cond holds, re-checking at each line of w; a
// minute bounds a failing test.
func waitFor(t *testing.T, w *watcher, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(time.Minute)
	for !cond() {
		_, changed := w.find("\x00") // no line has it: the channel of the next line
		if cond() {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
