// Package mixedload measures Hopper under a steady stream of new jobs:
// producer goroutines enqueue one job per call, at a set rate or as fast as
// they can, while the client's workers run them, as an application that
// enqueues from its request handlers does. It reports how many jobs went in
// and how many were worked per second, the backlog left, and the time from
// just before Enqueue to the handler's start. The capacity the rates are
// set against is measured in the same run: the same workers on a queue
// filled beforehand.
//
// The client counts completions through a subscription, as an application
// with metrics or a dashboard has one: a worker that waited for events to be
// delivered once fell to a tenth of the enqueue rate (issue 19), which a
// load without observers would not show.
//
// bench_test.go's BenchmarkMixed and "hopper bench --mixed" drive it.
package mixedload

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// Kind is the job kind the load enqueues; its handler does nothing but
// note when it started.
const Kind = "mixedload_noop"

// Defaults of Config's fields.
const (
	WorkersDefault      = 100
	ProducersDefault    = 8
	DurationDefault     = 10 * time.Second
	WarmupDefault       = time.Second
	CapacityJobsDefault = 50000
	BatchDefault        = 1000
)

// Config configures a load. Its zero value means the defaults, except
// Open, which is required.
type Config struct {
	// Open returns a new, empty store for one phase, and a function that
	// closes and deletes it.
	Open func(ctx context.Context) (store.Store, func(), error)
	// Workers is the client's Concurrency; default 100.
	Workers int
	// Producers is how many goroutines enqueue, one job per call; default 8.
	Producers int
	// Duration is how long a phase is measured; default 10s.
	Duration time.Duration
	// Warmup is how long producers run before a phase's measurement
	// starts; default 1s (negative: none).
	Warmup time.Duration
	// CapacityJobs is how many jobs the capacity is measured on; default
	// 50,000.
	CapacityJobs int
	// Batch is the size of the EnqueueMany calls that fill the queue for
	// the capacity; default 1,000.
	Batch int
}

func (c Config) withDefaults() (Config, error) {
	if c.Open == nil {
		return c, errors.New("mixedload: Config.Open is required")
	}
	c.Workers = cmp.Or(c.Workers, WorkersDefault)
	c.Producers = cmp.Or(c.Producers, ProducersDefault)
	c.Duration = cmp.Or(c.Duration, DurationDefault)
	c.Warmup = cmp.Or(c.Warmup, WarmupDefault)
	c.CapacityJobs = cmp.Or(c.CapacityJobs, CapacityJobsDefault)
	c.Batch = cmp.Or(c.Batch, BatchDefault)
	switch {
	case c.Workers < 1 || c.Workers > hopper.MaxConcurrency:
		return c, fmt.Errorf("mixedload: workers %d: must be between 1 and %d", c.Workers, hopper.MaxConcurrency)
	case c.Producers < 1:
		return c, fmt.Errorf("mixedload: producers %d: must be at least 1", c.Producers)
	case c.Duration < 0:
		return c, fmt.Errorf("mixedload: duration %s: must not be negative", c.Duration)
	case c.CapacityJobs < 1 || c.Batch < 1:
		return c, errors.New("mixedload: capacity jobs and batch must be at least 1")
	}
	c.Warmup = max(c.Warmup, 0)
	return c, nil
}

// Load is the rate a phase's producers enqueue at: a fraction of the
// capacity, a number of jobs per second, or (both zero) as fast as they can.
type Load struct {
	Fraction float64 // of the capacity measured
	Rate     float64 // jobs/s
}

// FlatOut is the load of producers enqueueing as fast as they can.
var FlatOut = Load{}

// StandardLoads are the loads the benchmarks run: 30%, 50% and 80% of
// capacity, and flat out.
var StandardLoads = []Load{{Fraction: 0.3}, {Fraction: 0.5}, {Fraction: 0.8}, FlatOut}

// String returns the load as ParseLoads reads it: "30%", "5000/s", "max".
func (l Load) String() string {
	switch {
	case l.Fraction > 0:
		return strconv.FormatFloat(l.Fraction*100, 'f', -1, 64) + "%"
	case l.Rate > 0:
		return strconv.FormatFloat(l.Rate, 'f', -1, 64) + "/s"
	}
	return "max"
}

// target is the rate the load offers at capacity c; 0 is flat out.
func (l Load) target(c float64) float64 {
	if l.Fraction > 0 {
		return l.Fraction * c
	}
	return l.Rate
}

// ParseLoads reads a comma-separated list of loads: "30%" (of capacity),
// "5000" or "5000/s" (jobs per second), "max" (flat out).
func ParseLoads(s string) ([]Load, error) {
	var out []Load
	for f := range strings.SplitSeq(s, ",") {
		f = strings.TrimSpace(f)
		var l Load
		switch {
		case f == "max":
		case strings.HasSuffix(f, "%"):
			v, err := strconv.ParseFloat(strings.TrimSuffix(f, "%"), 64)
			if err != nil || !(v > 0) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("load %q: want a percentage of capacity above 0, like 30%%", f)
			}
			l.Fraction = v / 100
		default:
			v, err := strconv.ParseFloat(strings.TrimSuffix(f, "/s"), 64)
			if err != nil || !(v > 0) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("load %q: want 30%% (of capacity), 5000 (jobs/s) or max", f)
			}
			l.Rate = v
		}
		out = append(out, l)
	}
	return out, nil
}

// Capacity is what the workers reach on a queue filled beforehand.
type Capacity struct {
	Jobs int
	Took time.Duration // from the client's start to the last completion seen
	Rate float64       // jobs/s
}

// Result is what one phase measured.
type Result struct {
	Load   Load
	Target float64 // jobs/s offered; 0: flat out
	Window time.Duration
	// Inserted and Worked are jobs per second over the window: enqueues
	// that returned, completions reported.
	Inserted, Worked float64
	// Backlog is how many jobs enqueued since the phase began were not
	// completed when the window ended.
	Backlog int64
	// P50, P99 and Max are the times from just before Enqueue to the
	// handler's start, of the jobs that started within the window
	// (Samples of them).
	P50, P99, Max time.Duration
	Samples       int
	// Claims is how many claims the client made in the window (store
	// calls that claim: Claim, FinishClaim), per job worked.
	Claims float64
}

// Ratio is worked/inserted.
func (r Result) Ratio() float64 {
	if r.Inserted == 0 {
		return 0
	}
	return r.Worked / r.Inserted
}

// phase is one client on a new store, with the load's kind registered.
type phase struct {
	c       *hopper.Client
	closeSt func()
	base    time.Time // enqueue times are sent as nanoseconds since base
	done    atomic.Int64
	sub     *hopper.Subscription
	counted chan struct{}
	claims  atomic.Int64 // store calls that claimed

	mu        sync.Mutex
	recording bool
	lat       []time.Duration
}

func newPhase(ctx context.Context, cfg Config) (*phase, error) {
	st, closeSt, err := cfg.Open(ctx)
	if err != nil {
		return nil, err
	}
	p := &phase{closeSt: closeSt, base: time.Now(), counted: make(chan struct{})}
	ws := hopper.NewWorkers()
	hopper.RegisterRaw(ws, Kind, func(_ context.Context, args json.RawMessage) (any, error) {
		started := time.Since(p.base)
		p.mu.Lock()
		if p.recording {
			if at, err := strconv.ParseInt(string(args), 10, 64); err == nil {
				p.lat = append(p.lat, started-time.Duration(at))
			}
		}
		p.mu.Unlock()
		return nil, nil
	}, nil)
	p.c, err = hopper.NewClient(hopper.Config{Store: st, Workers: ws, Concurrency: cfg.Workers, Logger: slog.New(slog.DiscardHandler),
		OnStoreCall: func(op string, _ time.Duration, _ error) {
			if op == "claim" || op == "finish_claim" {
				p.claims.Add(1)
			}
		}})
	if err != nil {
		closeSt()
		return nil, err
	}
	p.sub = p.c.Subscribe(job.EventCompleted)
	go func() {
		defer close(p.counted)
		for range p.sub.C {
			p.done.Add(1)
		}
	}()
	return p, nil
}

// completed is how many completions the phase saw (or dropped).
func (p *phase) completed() int64 { return p.done.Load() + p.sub.Dropped() }

func (p *phase) stop() {
	_ = p.c.StopNow()
	<-p.counted
	p.closeSt()
}

// MeasureCapacity fills a new store with cfg.CapacityJobs jobs, then starts
// the workers and times them until all are completed.
func MeasureCapacity(ctx context.Context, cfg Config) (Capacity, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return Capacity{}, err
	}
	p, err := newPhase(ctx, cfg)
	if err != nil {
		return Capacity{}, err
	}
	defer p.stop()
	batch := make([]hopper.EnqueueRequest, cfg.Batch)
	for i := range batch {
		batch[i] = hopper.EnqueueRequest{Kind: Kind, Args: json.RawMessage("0")}
	}
	for left := cfg.CapacityJobs; left > 0; left -= cfg.Batch {
		if _, err := p.c.EnqueueMany(ctx, batch[:min(left, cfg.Batch)]); err != nil {
			return Capacity{}, fmt.Errorf("fill the queue: %w", err)
		}
	}
	t0 := time.Now()
	if err := p.c.Start(); err != nil {
		return Capacity{}, err
	}
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for p.completed() < int64(cfg.CapacityJobs) {
		select {
		case <-ctx.Done():
			return Capacity{}, ctx.Err()
		case <-tick.C:
		}
	}
	took := time.Since(t0)
	return Capacity{Jobs: cfg.CapacityJobs, Took: took, Rate: float64(cfg.CapacityJobs) / took.Seconds()}, nil
}

// Run runs one phase on a new store: cfg.Producers goroutines enqueue one
// job per call at load (against capacity, in jobs/s), for cfg.Warmup and
// then cfg.Duration, while the workers run them.
func Run(ctx context.Context, cfg Config, capacity float64, load Load) (Result, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return Result{}, err
	}
	if load.Fraction > 0 && !(capacity > 0) {
		return Result{}, fmt.Errorf("mixedload: load %s needs the capacity", load)
	}
	p, err := newPhase(ctx, cfg)
	if err != nil {
		return Result{}, err
	}
	defer p.stop()
	if err := p.c.Start(); err != nil {
		return Result{}, err
	}
	res := Result{Load: load, Target: load.target(capacity)}
	var (
		inserted atomic.Int64
		failed   atomic.Pointer[error]
		wg       sync.WaitGroup
	)
	pctx, stop := context.WithCancel(ctx)
	defer stop()
	begin := time.Now()
	var interval time.Duration // between one producer's enqueues
	if res.Target > 0 {
		interval = time.Duration(float64(cfg.Producers) / res.Target * float64(time.Second))
	}
	for g := range cfg.Producers {
		wg.Go(func() {
			next := begin.Add(interval * time.Duration(g) / time.Duration(cfg.Producers))
			args := make([]byte, 0, 20)
			for pctx.Err() == nil {
				if interval > 0 {
					if d := time.Until(next); d > 0 {
						time.Sleep(d)
					}
					next = next.Add(interval) // behind: catch up at once
				}
				args = strconv.AppendInt(args[:0], int64(time.Since(p.base)), 10)
				if _, err := p.c.Enqueue(ctx, Kind, json.RawMessage(args), nil); err != nil {
					if pctx.Err() == nil {
						failed.CompareAndSwap(nil, &err)
						stop()
					}
					return
				}
				inserted.Add(1)
			}
		})
	}
	wait := func(d time.Duration) {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-pctx.Done():
		}
	}
	wait(cfg.Warmup)
	p.mu.Lock()
	p.recording = true
	p.mu.Unlock()
	ins0, done0, claims0, t0 := inserted.Load(), p.completed(), p.claims.Load(), time.Now()
	wait(cfg.Duration)
	ins1, done1, claims1 := inserted.Load(), p.completed(), p.claims.Load()
	res.Window = time.Since(t0)
	p.mu.Lock()
	p.recording = false
	lat := p.lat
	p.mu.Unlock()
	stop()
	wg.Wait()
	if e := failed.Load(); e != nil {
		return res, fmt.Errorf("enqueue: %w", *e)
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	secs := res.Window.Seconds()
	res.Inserted, res.Worked = float64(ins1-ins0)/secs, float64(done1-done0)/secs
	res.Backlog = ins1 - done1
	if done1 > done0 {
		res.Claims = float64(claims1-claims0) / float64(done1-done0)
	}
	if len(lat) > 0 {
		slices.Sort(lat)
		pct := func(q float64) time.Duration { return lat[min(len(lat)-1, int(q*float64(len(lat))))] }
		res.P50, res.P99, res.Max, res.Samples = pct(0.50), pct(0.99), lat[len(lat)-1], len(lat)
	}
	return res, nil
}
