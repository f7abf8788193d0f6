package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/internal/jsondur"
	"github.com/hopperq/hopper/internal/mixedload"
	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/memstore"
	"github.com/hopperq/hopper/store/pgstore"
	"github.com/hopperq/hopper/store/sqlitestore"
	"github.com/spf13/cobra"
)

// benchConfig are bench's flags.
type benchConfig struct {
	store, durability string
	jobs, workers     int
	batch, latency    int
	keep              bool
	// --mixed
	mixed            bool
	producers        int
	duration, warmup time.Duration
	loads            string
}

// benchResult is what bench measured, and under which conditions.
type benchResult struct {
	Store      string `json:"store"`
	File       string `json:"file,omitempty"`
	Schema     string `json:"schema,omitempty"` // postgres: the schema bench made
	Durability string `json:"durability,omitempty"`
	Jobs       int    `json:"jobs"`
	Batch      int    `json:"batch"`
	Workers    int    `json:"workers"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	NumCPU     int    `json:"num_cpu"`
	GoVersion  string `json:"go_version"`
	Platform   string `json:"platform"`
	// Durations are strings, as everywhere in the CLI's JSON ("1.5s").
	InsertTime  jsondur.Duration `json:"insert_time"`
	InsertRate  float64          `json:"inserted_per_second"`
	WorkTime    jsondur.Duration `json:"work_time"`
	WorkRate    float64          `json:"worked_per_second"`
	LatencyJobs int              `json:"latency_jobs"`
	P50         jsondur.Duration `json:"latency_p50"`
	P90         jsondur.Duration `json:"latency_p90"`
	P99         jsondur.Duration `json:"latency_p99"`
	Max         jsondur.Duration `json:"latency_max"`
}

func (a *app) benchCmd() *cobra.Command {
	var cfg benchConfig
	c := &cobra.Command{
		Use:   "bench [--store memory|sqlite|postgres] [--jobs N] [--workers N] [--batch N] [--durability full|normal] [--mixed [--producers N] [--duration D] [--loads L]]",
		Short: "Measure Hopper's own throughput and latency",
		Long: `Measure Hopper on this machine, like "river bench": a client with a no-op job
kind works jobs while N of them are enqueued in batches; it reports jobs
inserted per second, jobs worked per second (from the first enqueue until
the last completion is recorded in the store) and then, on the idle pool,
the latency from just before Enqueue to the handler's start, over jobs
enqueued one at a time.

With --store sqlite (the default) the database is a new file in a
temporary directory, and --db is not used. With --store postgres, --db (or
$HOPPER_DB) names the PostgreSQL database, and bench works in a new schema
of its own there, hopper_bench_<random> (its hopper_schema parameter is
replaced). Either is deleted afterwards unless --keep. Progress goes to
stderr when it is a terminal.

With --mixed, it measures a steady stream instead: first the capacity, the
rate the workers reach on a queue of --jobs jobs filled beforehand; then,
for each of --loads, --producers goroutines enqueue one job per call at
that rate (a percentage of the capacity, jobs per second, or max: as fast
as they can) for --warmup and then --duration, while the workers run them
and a subscription counts completions, as an application with metrics
does. Each load reports jobs inserted and worked per second, the backlog
(enqueued, not completed) when its window ended, and the latency from just
before Enqueue to the handler's start. Each load and the capacity get a new
database (a new file, a new schema).`,
		Example: `  hopper bench
  hopper bench --store memory --jobs 1000000
  hopper bench --durability normal --workers 50 --json
  hopper bench --store postgres --db postgres://app@db/app --workers 1000
  hopper bench --mixed --duration 20s --loads 30%,50%,80%,max
  hopper bench --mixed --store memory --producers 16 --loads 20000,max`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case cfg.store != "memory" && cfg.store != "sqlite" && cfg.store != "postgres":
				return usagef("bad --store %q: want memory, sqlite or postgres", cfg.store)
			case cfg.store == "postgres" && !strings.HasPrefix(strings.ToLower(a.db), "postgres"):
				return usagef("--store postgres needs --db (or HOPPER_DB) to name a database: postgres://user@host/db")
			case cfg.durability != "full" && cfg.durability != "normal":
				return usagef("bad --durability %q: want full or normal", cfg.durability)
			case cfg.jobs < 1 || cfg.batch < 1 || cfg.latency < 0:
				return usagef("--jobs and --batch must be at least 1, --latency-jobs at least 0")
			case cfg.workers < 1 || cfg.workers > hopper.MaxConcurrency:
				return usagef("bad --workers %d: must be between 1 and %d", cfg.workers, hopper.MaxConcurrency)
			}
			if cfg.mixed {
				loads, err := mixedload.ParseLoads(cfg.loads)
				switch {
				case err != nil:
					return usagef("bad --loads: %v", err)
				case cfg.producers < 1:
					return usagef("bad --producers %d: must be at least 1", cfg.producers)
				case cfg.duration <= 0:
					return usagef("bad --duration %s: must be positive", cfg.duration)
				case cfg.warmup < 0:
					return usagef("bad --warmup %s: must not be negative", cfg.warmup)
				}
				return a.benchMixed(cmd.Context(), cfg, loads)
			}
			for _, name := range []string{"producers", "duration", "warmup", "loads"} {
				if cmd.Flags().Changed(name) {
					return usagef("--%s needs --mixed", name)
				}
			}
			return a.bench(cmd.Context(), cfg)
		},
	}
	f := c.Flags()
	f.StringVar(&cfg.store, "store", "sqlite", "memory, sqlite or postgres (in a new schema of the --db database)")
	f.IntVar(&cfg.jobs, "jobs", 100000, "jobs to enqueue and work")
	f.IntVar(&cfg.workers, "workers", 100, "worker goroutines (the library default)")
	f.IntVar(&cfg.batch, "batch", 1000, "jobs per EnqueueMany call")
	f.StringVar(&cfg.durability, "durability", "full", "sqlite only: full (fsync every commit) or normal (survives kill -9, not power loss)")
	f.IntVar(&cfg.latency, "latency-jobs", 2000, "jobs enqueued one at a time to measure latency")
	f.BoolVar(&cfg.keep, "keep", false, "keep the temporary database file (or PostgreSQL schema)")
	f.BoolVar(&cfg.mixed, "mixed", false, "measure a steady stream of single-job enqueues against the capacity (see above)")
	f.IntVar(&cfg.producers, "producers", mixedload.ProducersDefault, "--mixed: goroutines enqueueing one job per call")
	f.DurationVar(&cfg.duration, "duration", mixedload.DurationDefault, "--mixed: how long each load is measured")
	f.DurationVar(&cfg.warmup, "warmup", mixedload.WarmupDefault, "--mixed: how long producers run before each load's measurement")
	f.StringVar(&cfg.loads, "loads", "30%,50%,80%,max", "--mixed: the producers' rates: a percentage of capacity, jobs/s, or max")
	return c
}

func (a *app) bench(ctx context.Context, cfg benchConfig) error {
	r := benchResult{
		Store: cfg.store, Jobs: cfg.jobs, Batch: cfg.batch, Workers: cfg.workers, LatencyJobs: cfg.latency,
		GOMAXPROCS: runtime.GOMAXPROCS(0), NumCPU: runtime.NumCPU(), GoVersion: runtime.Version(),
		Platform: runtime.GOOS + "/" + runtime.GOARCH,
	}
	var st store.Store
	switch cfg.store {
	case "memory":
		st = memstore.New()
	case "postgres":
		u, err := benchSchemaURL(a.db)
		if err != nil {
			return err
		}
		r.Schema = u.Query().Get("hopper_schema")
		st, err = store.Open(ctx, u.String(), store.OpenOptions{})
		if err != nil {
			return fmt.Errorf("open database: %w", err)
		}
		if !cfg.keep {
			defer func() {
				dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				if err := pgstore.DropSchema(dctx, u.String()); err != nil {
					fmt.Fprintf(a.Err, "hopper: drop the schema %s: %v\n", r.Schema, err)
				}
			}()
		}
	default:
		dir, err := os.MkdirTemp("", "hopper-bench-")
		if err != nil {
			return err
		}
		if !cfg.keep {
			defer os.RemoveAll(dir)
		}
		r.File, r.Durability = filepath.Join(dir, "bench.db"), cfg.durability
		if strings.Contains(r.File, "?") {
			return fmt.Errorf("temporary directory %s: a path with \"?\" cannot be a sqlite: URL", dir)
		}
		st, err = store.Open(ctx, sqlitestore.Scheme+":"+r.File+"?durability="+cfg.durability, store.OpenOptions{})
		if err != nil {
			return fmt.Errorf("open database: %w", err)
		}
	}
	defer st.Close()
	a.printConditions(&r)

	var worked atomic.Int64
	started := make(chan time.Time, 1)
	ws := hopper.NewWorkers()
	hopper.RegisterRaw(ws, "bench_noop", func(context.Context, json.RawMessage) (any, error) {
		worked.Add(1)
		return nil, nil
	}, nil)
	hopper.RegisterRaw(ws, "bench_latency", func(context.Context, json.RawMessage) (any, error) {
		started <- time.Now()
		return nil, nil
	}, nil)
	c, err := hopper.NewClient(hopper.Config{Store: st, Workers: ws, Concurrency: cfg.workers, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	defer c.Stop(context.Background())
	if err := c.Start(); err != nil {
		return err
	}

	// Throughput: enqueue in batches while the pool works.
	progress := newProgress(a.Err)
	var inserted atomic.Int64
	progress.start(func() string {
		return fmt.Sprintf("throughput: enqueued %d/%d, worked %d/%d", inserted.Load(), cfg.jobs, worked.Load(), cfg.jobs)
	})
	batch := make([]hopper.EnqueueRequest, cfg.batch)
	for i := range batch {
		batch[i] = hopper.EnqueueRequest{Kind: "bench_noop"}
	}
	t0 := time.Now()
	for left := cfg.jobs; left > 0; left -= cfg.batch {
		n := min(left, cfg.batch)
		if _, err := c.EnqueueMany(ctx, batch[:n]); err != nil {
			progress.stop()
			return fmt.Errorf("enqueue: %w", err)
		}
		inserted.Add(int64(n))
	}
	insertDur := time.Since(t0)
	for {
		s, err := c.Stats(ctx, 0)
		if err != nil {
			progress.stop()
			return err
		}
		if countState(s, hopper.StateCompleted) >= cfg.jobs {
			break
		}
		if err := sleepCtx(ctx, 5*time.Millisecond); err != nil {
			progress.stop()
			return err
		}
	}
	workDur := time.Since(t0)
	progress.stop()
	r.InsertTime, r.InsertRate = jsondur.Duration(insertDur), float64(cfg.jobs)/insertDur.Seconds()
	r.WorkTime, r.WorkRate = jsondur.Duration(workDur), float64(cfg.jobs)/workDur.Seconds()

	// Latency: one job at a time on the idle pool.
	lat := make([]time.Duration, 0, cfg.latency)
	progress.start(func() string { return fmt.Sprintf("latency: %d/%d jobs", len(lat), cfg.latency) })
	for range cfg.latency {
		t := time.Now()
		if _, err := c.Enqueue(ctx, "bench_latency", nil, nil); err != nil {
			progress.stop()
			return fmt.Errorf("enqueue: %w", err)
		}
		select {
		case s := <-started:
			lat = append(lat, s.Sub(t))
		case <-time.After(30 * time.Second):
			progress.stop()
			return errors.New("latency phase: a job did not start within 30s")
		case <-ctx.Done():
			progress.stop()
			return ctx.Err()
		}
	}
	progress.stop()
	if len(lat) > 0 {
		slices.Sort(lat)
		pct := func(p float64) jsondur.Duration {
			return jsondur.Duration(lat[min(len(lat)-1, int(p*float64(len(lat))))])
		}
		r.P50, r.P90, r.P99, r.Max = pct(0.50), pct(0.90), pct(0.99), jsondur.Duration(lat[len(lat)-1])
	}
	if err := c.Stop(ctx); err != nil {
		return err
	}
	if a.json {
		return printJSON(a.Out, r)
	}
	fmt.Fprintf(a.Out, "\nthroughput (%d no-op jobs, batches of %d, %d workers)\n", r.Jobs, r.Batch, r.Workers)
	t := newTable(a.Out)
	t.row("  inserted", fmt.Sprintf("%.0f jobs/s", r.InsertRate), fmt.Sprintf("(%d jobs in %.2fs)", r.Jobs, time.Duration(r.InsertTime).Seconds()))
	t.row("  worked", fmt.Sprintf("%.0f jobs/s", r.WorkRate), fmt.Sprintf("(first enqueue to last completion recorded: %.2fs)", time.Duration(r.WorkTime).Seconds()))
	t.flush()
	if r.LatencyJobs > 0 {
		fmt.Fprintf(a.Out, "\nlatency, enqueue → handler start (%d jobs one at a time, idle pool)\n", r.LatencyJobs)
		fmt.Fprintf(a.Out, "  p50 %.3fms  p90 %.3fms  p99 %.3fms  max %.3fms\n",
			ms(time.Duration(r.P50)), ms(time.Duration(r.P90)), ms(time.Duration(r.P99)), ms(time.Duration(r.Max)))
	}
	if cfg.keep && r.File != "" {
		fmt.Fprintf(a.Out, "\ndatabase kept at %s\n", r.File)
	}
	if cfg.keep && r.Schema != "" {
		fmt.Fprintf(a.Out, "\nschema %s kept\n", r.Schema)
	}
	return nil
}

func (a *app) printConditions(r *benchResult) {
	w := a.Out
	if a.json {
		w = a.Err
	}
	fmt.Fprintln(w, "hopper bench")
	t := newTable(w)
	switch r.Store {
	case "sqlite":
		t.row("  store", fmt.Sprintf("sqlite, durability %s", r.Durability))
		t.row("  file", r.File)
	case "postgres":
		t.row("  store", "postgres")
		t.row("  schema", r.Schema)
	default:
		t.row("  store", "memory")
	}
	t.row("  workers", r.Workers)
	t.row("  machine", fmt.Sprintf("GOMAXPROCS %d, %d CPUs, %s, %s", r.GOMAXPROCS, r.NumCPU, r.Platform, r.GoVersion))
	t.flush()
}

func countState(s hopper.Stats, state hopper.State) int {
	n := 0
	for _, m := range s.Queues {
		n += m[state]
	}
	return n
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// progress redraws one status line on a terminal every 200ms.
type progress struct {
	w    io.Writer
	on   bool
	done chan struct{}
	wait chan struct{}
}

func newProgress(w io.Writer) *progress { return &progress{w: w, on: isTerminal(w)} }

func (p *progress) start(line func() string) {
	if !p.on {
		return
	}
	p.done, p.wait = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(p.wait)
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			fmt.Fprintf(p.w, "\r\033[K%s", line())
			select {
			case <-p.done:
				fmt.Fprintf(p.w, "\r\033[K")
				return
			case <-t.C:
			}
		}
	}()
}

func (p *progress) stop() {
	if p.on && p.done != nil {
		close(p.done)
		<-p.wait
		p.done = nil
	}
}

// benchSchemaURL returns the --db URL with hopper_schema set to a new
// schema name of its own.
func benchSchemaURL(db string) (*url.URL, error) {
	u, err := url.Parse(db)
	if err != nil {
		return nil, usagef("bad --db: %s", store.Redacted(db))
	}
	var b [6]byte
	rand.Read(b[:])
	q := u.Query()
	q.Set("hopper_schema", "hopper_bench_"+hex.EncodeToString(b[:]))
	u.RawQuery = q.Encode()
	return u, nil
}
