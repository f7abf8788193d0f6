package hopper_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/internal/cputime"
	"github.com/hopperq/hopper/internal/pgtest"
	"github.com/hopperq/hopper/store"
	_ "github.com/hopperq/hopper/store/pgstore" // postgres://
	"github.com/hopperq/hopper/store/sqlitestore"
)

// BenchmarkEndToEndMemory measures enqueue (batches of 1,000) → no-op
// handler → completed on the in-memory store. Each iteration is one job;
// the reported jobs/s includes the final flush of outcomes.
func BenchmarkEndToEndMemory(b *testing.B) {
	for _, workers := range []int{1, 4, 16, 100, 1000} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			endToEnd(b, hopper.Config{Concurrency: workers})
		})
	}
}

// BenchmarkEndToEndSQLite is the same on the durable default: every
// enqueue, claim and outcome committed and fsynced.
func BenchmarkEndToEndSQLite(b *testing.B) {
	for _, workers := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			st, err := sqlitestore.Open(context.Background(), filepath.Join(b.TempDir(), "bench.db"), sqlitestore.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			endToEnd(b, hopper.Config{Store: st, Concurrency: workers, WorkerID: st.WorkerID()})
		})
	}
}

// BenchmarkEndToEndPostgres is the same on the PostgreSQL store, in a
// fresh schema (dropped afterwards) of the server HOPPER_TEST_POSTGRES
// names, as store/pgstore's tests. cpu-ns/job is this process's CPU only:
// the server's is not in it.
func BenchmarkEndToEndPostgres(b *testing.B) {
	for _, workers := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			st, err := store.Open(context.Background(), pgtest.StoreURL(b, 0), store.OpenOptions{})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			endToEnd(b, hopper.Config{Store: st, Concurrency: workers})
		})
	}
}

// noopClient returns a client on cfg with a no-op kind "noop", the count
// of jobs it ran, and a channel closed once it has run b.N of them.
func noopClient(b *testing.B, cfg hopper.Config) (*hopper.Client, *atomic.Int64, <-chan struct{}) {
	ws := hopper.NewWorkers()
	ran := new(atomic.Int64)
	done := make(chan struct{})
	n := int64(b.N)
	hopper.RegisterRaw(ws, "noop", func(ctx context.Context, _ json.RawMessage) (any, error) {
		if ran.Add(1) == n {
			close(done)
		}
		return nil, nil
	}, nil)
	cfg.Workers, cfg.Logger = ws, slog.New(slog.DiscardHandler)
	c, err := hopper.NewClient(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return c, ran, done
}

func endToEnd(b *testing.B, cfg hopper.Config) {
	c, _, done := noopClient(b, cfg)
	ctx := context.Background()
	batch := make([]hopper.EnqueueRequest, 1000)
	for i := range batch {
		batch[i] = hopper.EnqueueRequest{Kind: "noop"}
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cputime.Process()
	c.Start()
	for left := b.N; left > 0; left -= len(batch) {
		if _, err := c.EnqueueMany(ctx, batch[:min(left, len(batch))]); err != nil {
			b.Fatal(err)
		}
	}
	<-done
	if err := c.Stop(ctx); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
	b.ReportMetric(float64(cputime.Process()-cpu0)/float64(b.N), "cpu-ns/job")
}

// BenchmarkMixed is the mixed case: 8 producers each enqueueing one job
// per call as fast as they can while 100 workers run them (no-op), b.N jobs
// in all. It reports the enqueue rate (until the producers are done), the
// work rate (until the last job completed) and the backlog left when the
// producers finished: where enqueues and claims share a writer, the one
// must not starve the other.
func BenchmarkMixed(b *testing.B) {
	b.Run("store=memory", func(b *testing.B) { mixed(b, hopper.Config{}) })
	b.Run("store=sqlite", func(b *testing.B) {
		st, err := sqlitestore.Open(context.Background(), filepath.Join(b.TempDir(), "bench.db"), sqlitestore.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		mixed(b, hopper.Config{Store: st, WorkerID: st.WorkerID()})
	})
}

func mixed(b *testing.B, cfg hopper.Config) {
	const producers = 8
	cfg.Concurrency = 100
	c, ran, done := noopClient(b, cfg)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cputime.Process()
	start := time.Now()
	c.Start()
	var wg sync.WaitGroup
	for p := range producers {
		wg.Go(func() {
			for i := p; i < b.N; i += producers {
				if _, err := c.Enqueue(ctx, "noop", nil, nil); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	enqueued := time.Since(start)
	backlog := int64(b.N) - ran.Load()
	<-done
	if err := c.Stop(ctx); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/enqueued.Seconds(), "enqueued/s")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
	b.ReportMetric(float64(backlog), "backlog")
	b.ReportMetric(float64(cputime.Process()-cpu0)/float64(b.N), "cpu-ns/job")
}

// BenchmarkLatencyIdle measures enqueue → handler start on an idle pool: one
// job at a time, the next enqueued after the previous one started.
func BenchmarkLatencyIdle(b *testing.B) {
	ws := hopper.NewWorkers()
	started := make(chan time.Time, 1)
	hopper.RegisterRaw(ws, "noop", func(ctx context.Context, _ json.RawMessage) (any, error) {
		started <- time.Now()
		return nil, nil
	}, nil)
	c, err := hopper.NewClient(hopper.Config{Workers: ws, Concurrency: 10, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	c.Start()
	defer c.StopNow()
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		if _, err := c.Enqueue(ctx, "noop", nil, nil); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, (<-started).Sub(t0))
	}
	b.StopTimer()
	slices.Sort(lat)
	q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) }
	b.ReportMetric(q(0.5), "p50-µs")
	b.ReportMetric(q(0.99), "p99-µs")
}
