package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// sqlOldestAvailableScan is the former Stats.OldestAvailable query: it
// reads every entry of jobs_claim (ordered by priority before run-at). The
// test and the benchmark compare sqlOldestAvailable with it.
const sqlOldestAvailableScan = `SELECT queue, min(run_at) FROM jobs WHERE state = 'available' GROUP BY queue`

// queryOldest runs q, a query of (queue, earliest run-at) rows, on db.
func queryOldest(ctx context.Context, db *sql.DB, q string) (map[string]int64, error) {
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make(map[string]int64)
	for rows.Next() {
		var queue string
		var at int64
		if err := rows.Scan(&queue, &at); err != nil {
			return nil, err
		}
		out[queue] = at
	}
	return out, rows.Err()
}

// TestOldestAvailableSkipScan checks the loose index scan of
// sqlOldestAvailable against the jobs it reads, through Stats, and against
// the former query, on random jobs: queues, kinds and priorities with
// gaps, empty and extreme values, in every state.
func TestOldestAvailableSkipScan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "oldest.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	queues := []string{"", "a", "a ", "b", "default", "é", "Z"}
	kinds := []string{"", "k", "kk", "l", "m"}
	priorities := []int64{-1 << 62, -3, -1, 0, 1, 2, 7, 1 << 40}
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 40 {
		n := rng.IntN(200)
		if round == 0 {
			n = 0 // no jobs at all
		}
		want := make(map[string]time.Time)
		err := s.write(ctx, func(w *writer) error {
			if _, err := w.exec(`DELETE FROM jobs`); err != nil {
				return err
			}
			// Some rounds use few lanes, so that groups hold many jobs.
			nq, nk, np := 1+rng.IntN(len(queues)), 1+rng.IntN(len(kinds)), 1+rng.IntN(len(priorities))
			for range n {
				j := struct {
					queue, kind string
					priority    int64
					runAt       int64
					state       job.State
				}{
					queues[rng.IntN(nq)], kinds[rng.IntN(nk)], priorities[rng.IntN(np)],
					rng.Int64N(1<<50) - 1<<49, job.States[rng.IntN(len(job.States))],
				}
				if round%5 == 1 { // no available job in some rounds
					for j.state == job.StateAvailable {
						j.state = job.States[rng.IntN(len(job.States))]
					}
				}
				if _, err := w.exec(`INSERT INTO jobs (kind, queue, priority, run_at, state, max_attempts, created_at)
					VALUES (?, ?, ?, ?, ?, 1, 0)`, j.kind, j.queue, j.priority, j.runAt, stateName(j.state)); err != nil {
					return err
				}
				if at := store.FromUnixNanos(j.runAt); j.state == job.StateAvailable {
					if o, ok := want[j.queue]; !ok || at.Before(o) {
						want[j.queue] = at
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		st, err := s.Stats(ctx, store.StatsParams{Now: bt0})
		if err != nil {
			t.Fatal(err)
		}
		if len(want) == 0 && st.OldestAvailable != nil {
			t.Errorf("round %d: OldestAvailable = %v, want nil (no available job)", round, st.OldestAvailable)
		}
		if !maps.EqualFunc(st.OldestAvailable, want, time.Time.Equal) {
			t.Errorf("round %d (%d jobs): OldestAvailable = %v, want %v", round, n, st.OldestAvailable, want)
		}
		scan, err := queryOldest(ctx, s.rdb, sqlOldestAvailableScan)
		if err != nil {
			t.Fatal(err)
		}
		skip, err := queryOldest(ctx, s.rdb, sqlOldestAvailable)
		if err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(scan, skip) {
			t.Errorf("round %d: skip scan %v, former query %v", round, skip, scan)
		}
	}
}

// oldestFile builds, in dir, a database file of n available jobs spread
// evenly over 4 queues × 2 kinds × 3 priorities (24 groups of jobs_claim),
// with run-at times shuffled, and n/2 completed jobs after them, written
// with SQL (bulkWrite) as scaleFileDirect does.
func oldestFile(tb testing.TB, dir string, n int) string {
	path := filepath.Join(dir, fmt.Sprintf("oldest-%d.db", n))
	s := bOpen(tb, path, Options{Durability: DurabilityNormal})
	if err := s.Close(); err != nil {
		tb.Fatal(err)
	}
	// Job i: queue i%4, kind i/4%2, priority i/8%3; run-at bt0 plus a
	// permutation of the jobs' indexes in milliseconds (1000003 is a prime
	// that divides none of the sizes); jobs n and after completed.
	insert := `WITH RECURSIVE x(i) AS (SELECT ?1 UNION ALL SELECT i + 1 FROM x WHERE i + 1 < ?2)
		INSERT INTO jobs (kind, queue, priority, run_at, state, max_attempts, created_at, finished_at)
		SELECT 'kind' || (i / 4 % 2), 'queue' || (i % 4), i / 8 % 3, ?3 + (i * 1000003 % ?4) * 1000000,
			CASE WHEN i < ?5 THEN 'available' ELSE 'completed' END, 1, ?3,
			CASE WHEN i < ?5 THEN 0 ELSE ?3 END
		FROM x`
	total := n * 3 / 2
	const chunk = 1_000_000
	bulkWrite(tb, path, func(exec func(q string, args ...any)) {
		for from := 0; from < total; from += chunk {
			exec("BEGIN")
			exec(insert, from, min(total, from+chunk), store.UnixNanos(bt0), total, n)
			exec("COMMIT")
		}
	})
	return path
}

// BenchmarkStatsOldest: Stats.OldestAvailable on files of 10k and 1M
// available jobs (24 (queue, kind, priority) groups; 10M when the -bench
// pattern names rows=10000k), the former query (query=scan: every entry of
// jobs_claim) against the loose index scan (query=skip), and all of Stats
// (which runs the latter), e.g.
//
//	go test -run '^$' -bench StatsOldest -benchtime 2s ./store/sqlitestore/
func BenchmarkStatsOldest(b *testing.B) {
	dir := b.TempDir()
	files := make(map[int]string)
	for _, n := range []int{10_000, 1_000_000, 10_000_000} {
		name := fmt.Sprintf("rows=%dk", n/1000)
		file := func(b *testing.B) string {
			if n > 1_000_000 && !strings.Contains(benchPattern(), "10000k") {
				b.Skip("the 10M-job file is built only when -bench names rows=10000k")
			}
			if files[n] == "" {
				start := time.Now()
				files[n] = oldestFile(b, dir, n)
				b.Logf("built %d available jobs in %s", n, time.Since(start).Round(time.Millisecond))
				// Both queries give the same answer.
				s := bOpen(b, files[n], Options{})
				defer s.Close()
				scan, err := queryOldest(context.Background(), s.rdb, sqlOldestAvailableScan)
				if err != nil {
					b.Fatal(err)
				}
				skip, err := queryOldest(context.Background(), s.rdb, sqlOldestAvailable)
				if err != nil {
					b.Fatal(err)
				}
				if len(scan) != 4 || !maps.Equal(scan, skip) {
					b.Fatalf("skip scan %v, former query %v", skip, scan)
				}
			}
			return files[n]
		}
		for _, q := range []struct{ name, sql string }{{"scan", sqlOldestAvailableScan}, {"skip", sqlOldestAvailable}} {
			b.Run(name+"/query="+q.name, func(b *testing.B) {
				s := bOpen(b, file(b), Options{})
				defer s.Close()
				b.ResetTimer()
				for range b.N {
					if _, err := queryOldest(context.Background(), s.rdb, q.sql); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		b.Run(name+"/Stats", func(b *testing.B) {
			s := bOpen(b, file(b), Options{})
			defer s.Close()
			b.ResetTimer()
			for range b.N {
				if _, err := s.Stats(context.Background(), store.StatsParams{Now: bt0}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
