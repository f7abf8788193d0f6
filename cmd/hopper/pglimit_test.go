//go:build unix

package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hopperq/hopper/internal/pgtest"
)

// limitCounter is an HTTP endpoint that counts the requests in flight (the
// jobs running, measured outside Hopper) and keeps the peak, and which
// jobs called it. Each request takes 1-20 ms.
type limitCounter struct {
	mu       sync.Mutex
	inFlight int
	peak     int
	seen     map[int]int // job number → requests
	done     int         // requests answered
}

func (c *limitCounter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/job/"))
	c.mu.Lock()
	c.inFlight++
	c.peak = max(c.peak, c.inFlight)
	c.seen[n]++
	c.mu.Unlock()
	time.Sleep(time.Duration(1+rand.IntN(20)) * time.Millisecond) // the job's work
	c.mu.Lock()
	c.inFlight--
	c.done++
	c.mu.Unlock()
}

// TestPostgresGlobalLimitCrash runs three hopper serve processes (4
// workers each) on one PostgreSQL schema whose queue is limited to 3
// running jobs across them (hopper queue set --concurrency), kills one with
// SIGKILL three times while they work jobs of 1-20 ms, restarting it, and
// checks, outside Hopper: the jobs in flight never exceed 3; no job is
// lost; the slots of the killed servers' jobs come back (the run ends, and
// no slot is left held).
func TestPostgresGlobalLimitCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs it for a while; skipped with -short")
	}
	pgtest.ServerURL(t)
	t.Parallel()
	const (
		limit   = 3
		jobs    = 600
		kills   = 3
		workers = 4
	)
	counter := &limitCounter{seen: map[int]int{}}
	srv := httptest.NewServer(counter)
	t.Cleanup(srv.Close)
	cl := newPGCluster(t, "--lease", "3s", "--rescue-interval", "500ms")
	cl.run("", "migrate")
	cl.run("", "queue", "set", "default", "--concurrency", strconv.Itoa(limit))
	var in strings.Builder
	for i := range jobs {
		line, _ := json.Marshal(map[string]any{"kind": "http", "args": map[string]any{"url": fmt.Sprintf("%s/job/%d", srv.URL, i)}})
		in.Write(append(line, '\n'))
	}
	if got := strings.TrimSpace(cl.run(in.String(), "enqueue", "--bulk")); got != strconv.Itoa(jobs) {
		t.Fatalf("bulk enqueue printed %q, want %d", got, jobs)
	}
	for range 3 {
		cl.start(workers)
	}
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, seed>>1))
	t.Logf("seed %d", seed)
	for k := range kills {
		target := (k + 1) * jobs / (kills + 2)
		cl.poll(2*time.Minute, fmt.Sprintf("%d requests", target), func() bool {
			counter.mu.Lock()
			defer counter.mu.Unlock()
			return counter.done >= target
		})
		live := cl.live()
		victim := live[rng.IntN(len(live))]
		cl.kill(victim)
		t.Logf("kill %d at %d requests: %s", k+1, target, victim)
		cl.start(workers)
	}
	cl.poll(2*time.Minute, "the jobs to finish", func() bool { return cl.count(pgUnfinished) == 0 })
	counter.mu.Lock()
	peak, seen := counter.peak, len(counter.seen)
	counter.mu.Unlock()
	if peak > limit {
		t.Errorf("%d jobs ran at once across the servers, limit %d", peak, limit)
	}
	if seen != jobs {
		t.Errorf("%d of %d jobs ran", seen, jobs)
	}
	if n := cl.count(`state = 'completed'`); n != jobs {
		t.Errorf("%d of %d jobs completed", n, jobs)
	}
	out := cl.run("", "queue", "list", "--json")
	var qs []struct {
		Name  string `json:"name"`
		Slots int    `json:"slots"`
	}
	if err := json.Unmarshal([]byte(out), &qs); err != nil || len(qs) != 1 || qs[0].Slots != 0 {
		t.Errorf("queue list after the run: %s (%v); want default with no slot held", out, err)
	}
	t.Logf("peak %d in flight (limit %d), %d jobs, %d kills", peak, limit, jobs, kills)
	cl.stopAll()
}
