package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hopperq/hopper/internal/jsondur"
	"github.com/hopperq/hopper/internal/mixedload"
	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/memstore"
	"github.com/hopperq/hopper/store/pgstore"
	"github.com/hopperq/hopper/store/sqlitestore"
)

// mixedResult is what bench --mixed measured, and under which conditions.
type mixedResult struct {
	Store      string           `json:"store"`
	Durability string           `json:"durability,omitempty"`
	Workers    int              `json:"workers"`
	Producers  int              `json:"producers"`
	Duration   jsondur.Duration `json:"duration"` // of each load's window
	Warmup     jsondur.Duration `json:"warmup"`
	GOMAXPROCS int              `json:"gomaxprocs"`
	NumCPU     int              `json:"num_cpu"`
	GoVersion  string           `json:"go_version"`
	Platform   string           `json:"platform"`
	// Capacity is the same workers' rate on a queue filled beforehand.
	CapacityJobs int               `json:"capacity_jobs"`
	CapacityTime jsondur.Duration  `json:"capacity_time"`
	Capacity     float64           `json:"capacity_per_second"`
	Loads        []mixedLoadResult `json:"loads"`
}

// mixedLoadResult is one load of bench --mixed.
type mixedLoadResult struct {
	Load       string           `json:"load"`               // "30%", "5000/s", "max"
	Offered    float64          `json:"offered_per_second"` // 0: flat out
	Inserted   float64          `json:"inserted_per_second"`
	Worked     float64          `json:"worked_per_second"`
	Ratio      float64          `json:"worked_per_inserted"`
	OfCapacity float64          `json:"worked_per_capacity"`
	Backlog    int64            `json:"backlog"`
	P50        jsondur.Duration `json:"latency_p50"`
	P99        jsondur.Duration `json:"latency_p99"`
	Max        jsondur.Duration `json:"latency_max"`
	Samples    int              `json:"latency_jobs"`
	Claims     float64          `json:"claims_per_job"`
}

// benchMixed runs bench --mixed: the capacity, then each load, each on a
// new database.
func (a *app) benchMixed(ctx context.Context, cfg benchConfig, loads []mixedload.Load) error {
	r := mixedResult{
		Store: cfg.store, Workers: cfg.workers, Producers: cfg.producers,
		Duration: jsondur.Duration(cfg.duration), Warmup: jsondur.Duration(cfg.warmup),
		GOMAXPROCS: runtime.GOMAXPROCS(0), NumCPU: runtime.NumCPU(), GoVersion: runtime.Version(),
		Platform: runtime.GOOS + "/" + runtime.GOARCH,
	}
	open, done, err := a.mixedStores(cfg)
	if err != nil {
		return err
	}
	defer done()
	if cfg.store == "sqlite" {
		r.Durability = cfg.durability
	}
	a.printConditions(&benchResult{Store: r.Store, Durability: r.Durability, File: "a new file per load, in a temporary directory",
		Schema: "hopper_bench_<random>, a new one per load", Workers: r.Workers, GOMAXPROCS: r.GOMAXPROCS,
		NumCPU: r.NumCPU, Platform: r.Platform, GoVersion: r.GoVersion})
	mcfg := mixedload.Config{Open: open, Workers: cfg.workers, Producers: cfg.producers, Duration: cfg.duration,
		Warmup: cfg.warmup, CapacityJobs: cfg.jobs, Batch: cfg.batch}
	if cfg.warmup == 0 {
		mcfg.Warmup = -1 // none
	}
	progress := newProgress(a.Err)
	progress.start(func() string { return fmt.Sprintf("capacity: %d jobs filled beforehand", cfg.jobs) })
	capacity, err := mixedload.MeasureCapacity(ctx, mcfg)
	progress.stop()
	if err != nil {
		return fmt.Errorf("capacity: %w", err)
	}
	r.CapacityJobs, r.CapacityTime, r.Capacity = capacity.Jobs, jsondur.Duration(capacity.Took), capacity.Rate
	for _, l := range loads {
		progress.start(func() string { return fmt.Sprintf("load %s: %s of warm-up, %s measured", l, cfg.warmup, cfg.duration) })
		res, err := mixedload.Run(ctx, mcfg, capacity.Rate, l)
		progress.stop()
		if err != nil {
			return fmt.Errorf("load %s: %w", l, err)
		}
		r.Loads = append(r.Loads, mixedLoadResult{Load: l.String(), Offered: res.Target, Inserted: res.Inserted,
			Worked: res.Worked, Ratio: res.Ratio(), OfCapacity: res.Worked / capacity.Rate, Backlog: res.Backlog,
			P50: jsondur.Duration(res.P50), P99: jsondur.Duration(res.P99), Max: jsondur.Duration(res.Max), Samples: res.Samples,
			Claims: res.Claims})
	}
	if a.json {
		return printJSON(a.Out, r)
	}
	fmt.Fprintf(a.Out, "\ncapacity: %.0f jobs/s (%d jobs filled beforehand, worked in %.2fs)\n", r.Capacity, r.CapacityJobs,
		time.Duration(r.CapacityTime).Seconds())
	fmt.Fprintf(a.Out, "\nsteady producers: %d goroutines enqueueing one job per call, %s measured after %s of warm-up\n",
		r.Producers, time.Duration(r.Duration), time.Duration(r.Warmup))
	t := newTable(a.Out, "  load", "offered/s", "inserted/s", "worked/s", "worked/inserted", "of capacity", "backlog", "p50", "p99", "claims/job")
	for _, l := range r.Loads {
		offered := "max"
		if l.Offered > 0 {
			offered = fmt.Sprintf("%.0f", l.Offered)
		}
		t.row("  "+l.Load, offered, fmt.Sprintf("%.0f", l.Inserted), fmt.Sprintf("%.0f", l.Worked), fmt.Sprintf("%.3f", l.Ratio),
			fmt.Sprintf("%.0f%%", 100*l.OfCapacity), l.Backlog,
			fmt.Sprintf("%.3fms", ms(time.Duration(l.P50))), fmt.Sprintf("%.3fms", ms(time.Duration(l.P99))), fmt.Sprintf("%.3f", l.Claims))
	}
	t.flush()
	fmt.Fprintln(a.Out, "  (latency: enqueue → handler start; backlog: enqueued, not completed, when the window ended)")
	return nil
}

// mixedStores returns the function that opens a new store for each load of
// bench --mixed, and the one that removes what is left (the temporary
// directory) once bench is done.
func (a *app) mixedStores(cfg benchConfig) (func(context.Context) (store.Store, func(), error), func(), error) {
	switch cfg.store {
	case "memory":
		return func(context.Context) (store.Store, func(), error) {
			st := memstore.New()
			return st, func() { st.Close() }, nil
		}, func() {}, nil
	case "postgres":
		return func(ctx context.Context) (store.Store, func(), error) {
			u, err := benchSchemaURL(a.db)
			if err != nil {
				return nil, nil, err
			}
			st, err := store.Open(ctx, u.String(), store.OpenOptions{})
			if err != nil {
				return nil, nil, fmt.Errorf("open database: %w", err)
			}
			return st, func() {
				st.Close()
				if cfg.keep {
					fmt.Fprintf(a.Err, "hopper: schema %s kept\n", u.Query().Get("hopper_schema"))
					return
				}
				dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				if err := pgstore.DropSchema(dctx, u.String()); err != nil {
					fmt.Fprintf(a.Err, "hopper: drop the schema %s: %v\n", u.Query().Get("hopper_schema"), err)
				}
			}, nil
		}, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "hopper-bench-")
	if err != nil {
		return nil, nil, err
	}
	if strings.Contains(dir, "?") {
		os.RemoveAll(dir)
		return nil, nil, fmt.Errorf("temporary directory %s: a path with \"?\" cannot be a sqlite: URL", dir)
	}
	var n atomic.Int64
	open := func(ctx context.Context) (store.Store, func(), error) {
		file := filepath.Join(dir, fmt.Sprintf("mixed%d.db", n.Add(1)))
		st, err := store.Open(ctx, sqlitestore.Scheme+":"+file+"?durability="+cfg.durability, store.OpenOptions{})
		if err != nil {
			return nil, nil, fmt.Errorf("open database: %w", err)
		}
		return st, func() {
			st.Close()
			if !cfg.keep {
				for _, f := range []string{file, file + "-wal", file + "-shm"} {
					os.Remove(f)
				}
			}
		}, nil
	}
	return open, func() {
		if cfg.keep {
			fmt.Fprintf(a.Err, "hopper: databases kept in %s\n", dir)
			return
		}
		os.RemoveAll(dir)
	}, nil
}
