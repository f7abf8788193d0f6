package metrics

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/job"
	_ "github.com/hopperq/hopper/store/sqlitestore" // sqlite:
)

// BenchmarkScrape1M: GET /metrics on a SQLite store holding 1,000,000
// jobs in 10 queues (900k completed, 100k available in one queue), with
// the counts from the stats cache (warm: StatsMaxAge longer than the
// benchmark) and counted anew for every scrape (cold: the cost of a scrape
// that finds the cache expired), and what one count of the store costs,
// with and without the finished-lately window. Setting up the store takes
// a few minutes.
func BenchmarkScrape1M(b *testing.B) {
	ctx := context.Background()
	const jobs, batch = 1_000_000, 10_000
	path := filepath.Join(b.TempDir(), "scrape.db")
	ws := hopper.NewWorkers()
	hopper.RegisterRaw(ws, "noop", func(context.Context, json.RawMessage) (any, error) { return nil, nil }, nil)
	c, err := hopper.Open(ctx, "sqlite:"+path+"?durability=normal", hopper.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	reqs := make([]hopper.EnqueueRequest, batch)
	for n := 0; n < jobs; n += batch {
		for i := range reqs {
			reqs[i] = hopper.EnqueueRequest{Kind: "noop", Options: &hopper.EnqueueOptions{Queue: fmt.Sprintf("q%d", (n+i)%10)}}
		}
		if _, err := c.EnqueueMany(ctx, reqs); err != nil {
			b.Fatal(err)
		}
	}
	// Complete 90% of them, quickly: a client with many workers.
	c.StopNow()
	done := make(chan struct{})
	m := New(Options{})
	var finished atomic.Int64
	c, err = hopper.Open(ctx, "sqlite:"+path+"?durability=normal", hopper.Config{
		Workers: ws, Concurrency: 1000, Logger: slog.New(slog.DiscardHandler), Queues: map[string]hopper.QueueConfig{
			"q0": {}, "q1": {}, "q2": {}, "q3": {}, "q4": {}, "q5": {}, "q6": {}, "q7": {}, "q8": {},
		},
		OnEvent: func(ev hopper.Event) {
			m.OnEvent(ev)
			if ev.Type == job.EventCompleted {
				if finished.Add(1) == jobs*9/10 {
					close(done)
				}
			}
		},
		OnStoreCall: m.OnStoreCall,
	})
	if err != nil {
		b.Fatal(err)
	}
	defer c.StopNow()
	if err := c.Start(); err != nil {
		b.Fatal(err)
	}
	<-done
	c.Stop(ctx)
	c, err = hopper.Open(ctx, "sqlite:"+path, hopper.Config{Logger: slog.New(slog.DiscardHandler), OnEvent: m.OnEvent, OnStoreCall: m.OnStoreCall})
	if err != nil {
		b.Fatal(err)
	}
	defer c.StopNow()
	// What a cold scrape pays: one count of the store, without and with
	// the finished-lately window.
	for _, window := range []time.Duration{0, time.Hour} {
		b.Run(fmt.Sprintf("stats/window=%s", window), func(b *testing.B) {
			for b.Loop() {
				if _, err := c.Stats(ctx, window); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	for _, tc := range []struct {
		name   string
		maxAge time.Duration
	}{{"warm", time.Hour}, {"cold", time.Nanosecond}} {
		b.Run(tc.name, func(b *testing.B) {
			m.o.StatsMaxAge = tc.maxAge
			m.Attach(c)
			h := m.Handler()
			if n, _ := c.Count(ctx, hopper.ListOptions{}); n != jobs {
				b.Fatalf("%d jobs", n)
			}
			h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/metrics", nil)) // fills the cache
			b.ResetTimer()
			for b.Loop() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
				if rec.Code != 200 {
					b.Fatalf("scrape: %d", rec.Code)
				}
				io.Copy(io.Discard, rec.Body)
			}
		})
	}
}

// BenchmarkOverhead: jobs enqueued in batches of 1,000 and run to
// completion by a started client on the in-memory store, without the
// metrics' hooks and with them: what the metrics cost the hot path.
func BenchmarkOverhead(b *testing.B) {
	for _, hooked := range []bool{false, true} {
		b.Run(fmt.Sprintf("metrics=%v", hooked), func(b *testing.B) {
			ctx := context.Background()
			ws := hopper.NewWorkers()
			hopper.RegisterRaw(ws, "noop", func(context.Context, json.RawMessage) (any, error) { return nil, nil }, nil)
			var left atomic.Int64
			left.Store(int64(b.N))
			done := make(chan struct{})
			m := New(Options{})
			cfg := hopper.Config{Workers: ws, Logger: slog.New(slog.DiscardHandler), OnEvent: func(ev hopper.Event) {
				if hooked {
					m.OnEvent(ev)
				}
				if ev.Type == job.EventCompleted && left.Add(-1) == 0 {
					close(done)
				}
			}}
			if hooked {
				cfg.OnStoreCall = m.OnStoreCall
			}
			c, err := hopper.NewClient(cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer c.StopNow()
			if err := c.Start(); err != nil {
				b.Fatal(err)
			}
			reqs := make([]hopper.EnqueueRequest, 1000)
			for i := range reqs {
				reqs[i] = hopper.EnqueueRequest{Kind: "noop"}
			}
			b.ResetTimer()
			for n := b.N; n > 0; n -= len(reqs) {
				if _, err := c.EnqueueMany(ctx, reqs[:min(n, len(reqs))]); err != nil {
					b.Fatal(err)
				}
			}
			<-done
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
		})
	}
}

// BenchmarkOnEvent: the hooks' cost per job, three events (enqueued,
// started, completed) of one (queue, kind) pair already counted — and
// the part of it that is the lookup of the pair's labels (the bound of
// the labels, MaxQueueKinds).
func BenchmarkOnEvent(b *testing.B) {
	now := time.Now()
	j := &hopper.Job{Queue: "emails", Kind: "send_email", State: hopper.StateCompleted, Attempt: 1,
		RunAt: now, CreatedAt: now, StartedAt: now,
		Attempts: []hopper.Attempt{{Attempt: 1, StartedAt: now, Duration: time.Millisecond, Outcome: "completed"}}}
	b.Run("events", func(b *testing.B) {
		m := New(Options{})
		evs := []hopper.Event{{Type: job.EventEnqueued, Job: j}, {Type: job.EventStarted, Job: j}, {Type: job.EventCompleted, Job: j}}
		b.ReportAllocs()
		for b.Loop() {
			for _, ev := range evs {
				m.OnEvent(ev)
			}
		}
	})
	b.Run("labels", func(b *testing.B) {
		p := newPairs(DefaultMaxQueueKinds)
		for i := range DefaultMaxQueueKinds - 1 {
			p.labels(fmt.Sprintf("q%d", i), "k")
		}
		b.ReportAllocs()
		for b.Loop() {
			p.labels(j.Queue, j.Kind)
		}
	})
}

// BenchmarkQueueGauges: what the bound of the job gauges costs a scrape
// of a store with 100,000 queues (the MaxQueues with the most jobs kept,
// the rest summed), beside the count of the store that found them.
func BenchmarkQueueGauges(b *testing.B) {
	st := hopper.Stats{Queues: map[string]map[hopper.State]int{}, OldestAvailable: map[string]time.Time{}}
	now := time.Now()
	for i := range 100_000 {
		q := fmt.Sprintf("q%06d", i)
		st.Queues[q] = map[hopper.State]int{hopper.StateAvailable: i % 7, hopper.StateCompleted: 1}
		st.OldestAvailable[q] = now
	}
	for b.Loop() {
		queueGauges(st, DefaultMaxQueues)
	}
}
