package engine

import (
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// TestHandoffWakesAWorkerPerJob: jobs pushed while workers wait each get a
// worker at once, in the order pushed; outcomes come out in batches of at
// most the limit; after close the workers take what is left and return,
// and after end the completer gets the last outcomes, then false.
func TestHandoffWakesAWorkerPerJob(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const workers = 4
		h := newHandoff(workers)
		var mu sync.Mutex
		var took []job.ID
		release := make(chan struct{})
		var wg sync.WaitGroup
		startWorkers(h, workers, &wg, func(j *job.Job) {
			mu.Lock()
			took = append(took, j.ID)
			mu.Unlock()
			<-release // a long handler
		})
		taken := func() []job.ID {
			synctest.Wait()
			mu.Lock()
			defer mu.Unlock()
			return append([]job.ID(nil), took...)
		}
		push := func(ids ...job.ID) {
			js := make([]*job.Job, len(ids))
			for i, id := range ids {
				js[i] = &job.Job{ID: id}
			}
			h.push(js)
		}

		push(1, 2, 3)
		if got := taken(); len(got) != 3 || h.pending() != 0 {
			t.Fatalf("3 jobs pushed to 4 waiting workers: taken %v, %d pending", got, h.pending())
		}
		push(4)
		if got := taken(); len(got) != 4 {
			t.Fatalf("a 4th job: taken %v", got)
		}
		push(5, 6) // every worker busy: the jobs wait for the first to return
		release <- struct{}{}
		if got := taken(); len(got) != 5 || got[4] != 5 || h.pending() != 1 {
			t.Fatalf("one worker returned: taken %v, %d pending; want job 5 taken, 6 pending", got, h.pending())
		}

		var batch []finished
		batch, ok := h.outcomes(batch, 2)
		if !ok || len(batch) != 1 || batch[0].outcome.ID > 4 {
			t.Fatalf("outcomes: %v %v, want one of jobs 1–4", batch, ok)
		}
		clear(batch)
		for range 3 {
			release <- struct{}{}
		}
		synctest.Wait()
		if batch, ok = h.outcomes(batch, 2); !ok || len(batch) != 2 {
			t.Fatalf("outcomes with limit 2 of 3: %d, %v", len(batch), ok)
		}
		clear(batch)
		if batch, ok = h.outcomes(batch, 2); !ok || len(batch) != 1 {
			t.Fatalf("the outcome left: %d, %v", len(batch), ok)
		}
		clear(batch)

		h.close()
		close(release)
		wg.Wait()
		h.end()
		if got := taken(); len(got) != 6 {
			t.Fatalf("after close: taken %v, want all 6", got)
		}
		n := 0
		for {
			if batch, ok = h.outcomes(batch, 100); !ok {
				break
			}
			n += len(batch)
			clear(batch)
		}
		if n != 2 {
			t.Fatalf("after end: %d outcomes, want the last 2", n)
		}
	})
}

// TestHandoffEveryOutcomeOnce pushes jobs as fill does (never more than
// there are free workers) from two goroutines while workers run them and a
// completer frees their slots: every job is run once and its outcome
// reaches the completer once.
func TestHandoffEveryOutcomeOnce(t *testing.T) {
	t.Parallel()
	const workers, total = 8, 20000
	h := newHandoff(workers)
	var active atomic.Int64
	var claimMu sync.Mutex
	var next job.ID
	freed := make(chan struct{}, 1)
	fill := func() bool {
		claimMu.Lock()
		defer claimMu.Unlock()
		n := min(workers-int(active.Load()), total-int(next))
		js := make([]*job.Job, 0, max(n, 0))
		for range n {
			next++
			js = append(js, &job.Job{ID: next})
		}
		active.Add(int64(len(js)))
		h.push(js)
		return int(next) < total
	}
	var workerWG, fillers sync.WaitGroup
	noopWorkers(h, workers, &workerWG)
	for range 2 {
		fillers.Go(func() {
			for fill() {
				<-freed
			}
		})
	}
	seen := make([]bool, total+1)
	got := 0
	var batch []finished
	for got < total {
		var ok bool
		if batch, ok = h.outcomes(batch, 3); !ok {
			t.Fatal("outcomes ended early")
		}
		for i := range batch {
			id := batch[i].outcome.ID
			if seen[id] {
				t.Fatalf("job %d finished twice", id)
			}
			seen[id] = true
			got++
			active.Add(-1)
			batch[i] = finished{}
		}
		for range 2 {
			select {
			case freed <- struct{}{}:
			default:
			}
		}
	}
	close(freed)
	fillers.Wait()
	h.close()
	workerWG.Wait()
	h.end()
	if _, ok := h.outcomes(batch, 3); ok {
		t.Fatal("outcomes after the last one")
	}
}

// noopWorkers starts n workers on h, in wg, that finish each job at once
// until h is closed.
func noopWorkers(h *handoff, n int, wg *sync.WaitGroup) { startWorkers(h, n, wg, nil) }

// startWorkers starts n workers on h, in wg, that call run (if set) on
// each job and then finish it, until h is closed.
func startWorkers(h *handoff, n int, wg *sync.WaitGroup, run func(*job.Job)) {
	for range n {
		wg.Go(func() {
			var f finished
			for done := false; ; done = true {
				j, ok := h.next(f, done)
				if !ok {
					return
				}
				if run != nil {
					run(j)
				}
				f = finished{j: j, outcome: store.Outcome{ID: j.ID}}
			}
		})
	}
}
