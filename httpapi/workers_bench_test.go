package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/internal/pgtest"
)

// BenchmarkRemoteWorkers compares the jobs per second worked by remote
// workers over the worker protocol with those of the client's own pool,
// on the same store and machine: b.N jobs enqueued first (batches of
// 1,000), then worked to the end. remote: 4 workers, each a goroutine
// speaking HTTP to the API on loopback, fetching and completing batches
// of 100 (fetch max 100 with a wait, complete/batch); the server's
// client runs no job itself. in-process: a started client with 100
// workers and a handler that does nothing. jobs/s is the figure to read.
//
//	go test -run '^$' -bench RemoteWorkers -benchtime 20000x ./httpapi/
func BenchmarkRemoteWorkers(b *testing.B) {
	for _, st := range []string{"memory", "sqlite", "postgres"} {
		for _, mode := range []string{"in-process", "remote"} {
			b.Run(st+"/"+mode, func(b *testing.B) {
				done := make(chan struct{})
				var finished atomic.Int64
				n := int64(b.N)
				ws := hopper.NewWorkers()
				cfg := hopper.Config{Logger: slog.New(slog.DiscardHandler), Concurrency: 100, ExternalKinds: []string{"remote"}}
				if mode == "in-process" {
					hopper.RegisterRaw(ws, "remote", func(ctx context.Context, _ json.RawMessage) (any, error) { return nil, nil }, nil)
					cfg.ExternalKinds = nil
					cfg.OnEvent = func(ev hopper.Event) {
						if ev.Type == "completed" && finished.Add(1) == n {
							close(done)
						}
					}
				}
				cfg.Workers = ws
				var c *hopper.Client
				var err error
				switch st {
				case "sqlite":
					c, err = hopper.Open(context.Background(), "sqlite:"+filepath.Join(b.TempDir(), "bench.db"), cfg)
				case "postgres":
					c, err = hopper.Open(context.Background(), pgtest.StoreURL(b, 0), cfg) // skips without a server
				default:
					c, err = hopper.NewClient(cfg)
				}
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { c.StopNow() })
				reqs := make([]hopper.EnqueueRequest, 0, 1000)
				for left := b.N; left > 0; left -= len(reqs) {
					reqs = reqs[:0]
					for range min(left, 1000) {
						reqs = append(reqs, hopper.EnqueueRequest{Kind: "remote"})
					}
					if _, err := c.EnqueueMany(context.Background(), reqs); err != nil {
						b.Fatal(err)
					}
				}
				srv := httptest.NewServer(New(c, Options{Logger: slog.New(slog.DiscardHandler)}))
				b.Cleanup(srv.Close)
				b.ResetTimer()
				start := time.Now()
				if mode == "in-process" {
					if err := c.Start(); err != nil {
						b.Fatal(err)
					}
					<-done
				} else {
					var wg sync.WaitGroup
					for range 4 {
						wg.Go(func() { remoteWorker(b, srv.URL, &finished, n) })
					}
					wg.Wait()
				}
				b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "jobs/s")
			})
		}
	}
}

// remoteWorker registers, then fetches batches of 100 and completes each
// in one call, until n jobs are finished in all.
func remoteWorker(b *testing.B, base string, finished *atomic.Int64, n int64) {
	hc := keepAlive(1)
	call := func(path string, body any, v any) {
		buf, _ := json.Marshal(body)
		res, err := hc.Post(base+"/api/v1"+path, "application/json", bytes.NewReader(buf))
		if err != nil {
			b.Error(err)
			return
		}
		defer res.Body.Close()
		if res.StatusCode/100 != 2 {
			b.Errorf("%s: status %d", path, res.StatusCode)
			return
		}
		if err := json.NewDecoder(res.Body).Decode(v); err != nil {
			b.Error(err)
		}
	}
	var w workerView
	call("/workers", hopper.WorkerSpec{Kinds: []string{"remote"}, Slots: 100}, &w)
	type completion struct {
		Token string `json:"token"`
	}
	for finished.Load() < n && !b.Failed() {
		var f hopper.FetchResult
		call(fmt.Sprintf("/workers/%s/fetch", w.ID), map[string]any{"max": 100, "wait": 0.2}, &f)
		if len(f.Leases) == 0 {
			continue
		}
		cs := make([]completion, len(f.Leases))
		for i, l := range f.Leases {
			cs[i].Token = l.Token
		}
		var done finishedView
		call(fmt.Sprintf("/workers/%s/complete/batch", w.ID), map[string]any{"completions": cs}, &done)
		finished.Add(int64(len(done.Jobs)))
	}
}

// BenchmarkRemoteLatency: with a remote worker's long poll waiting on
// loopback, the time from an enqueue (Client.Enqueue in the server's
// process) to the fetch's answer in the worker, one job at a time; the
// worker completes each before it polls again. p50 and p99 are the
// figures to read.
//
//	go test -run '^$' -bench RemoteLatency -benchtime 2000x ./httpapi/
func BenchmarkRemoteLatency(b *testing.B) {
	for _, st := range []string{"memory", "sqlite"} {
		b.Run(st, func(b *testing.B) {
			cfg := hopper.Config{Logger: slog.New(slog.DiscardHandler), ExternalKinds: []string{"remote"}}
			var c *hopper.Client
			var err error
			if st == "sqlite" {
				c, err = hopper.Open(context.Background(), "sqlite:"+filepath.Join(b.TempDir(), "bench.db"), cfg)
			} else {
				c, err = hopper.NewClient(cfg)
			}
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { c.StopNow() })
			srv := httptest.NewServer(New(c, Options{Logger: slog.New(slog.DiscardHandler)}))
			b.Cleanup(srv.Close)
			hc := keepAlive(1)
			call := func(path string, body, v any) {
				buf, _ := json.Marshal(body)
				res, err := hc.Post(srv.URL+"/api/v1"+path, "application/json", bytes.NewReader(buf))
				if err != nil {
					b.Fatal(err)
				}
				defer res.Body.Close()
				if err := json.NewDecoder(res.Body).Decode(v); err != nil {
					b.Fatal(err)
				}
			}
			var w workerView
			call("/workers", hopper.WorkerSpec{Kinds: []string{"remote"}, Slots: 1}, &w)
			fetched := make(chan time.Time)
			go func() {
				for range b.N {
					var f hopper.FetchResult
					for len(f.Leases) == 0 {
						call("/workers/"+w.ID+"/fetch", map[string]any{"max": 1, "wait": "30s"}, &f)
					}
					at := time.Now()
					var done finishedView
					call("/workers/"+w.ID+"/complete", map[string]any{"token": f.Leases[0].Token}, &done)
					fetched <- at
				}
			}()
			lat := make([]time.Duration, b.N)
			b.ResetTimer()
			for i := range b.N {
				start := time.Now()
				if _, err := c.Enqueue(context.Background(), "remote", nil, nil); err != nil {
					b.Fatal(err)
				}
				lat[i] = (<-fetched).Sub(start)
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}
