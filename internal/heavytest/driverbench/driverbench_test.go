package driverbench

// The driver comparison behind docs/sqlite.md: the same store operations on
// modernc.org/sqlite (pure Go) and github.com/mattn/go-sqlite3 (cgo), both
// SQLite 3.54.1. Run, in internal/heavytest, with
//
//	go test -run '^$' -bench BenchmarkDriver -benchtime 2s -count 3 ./driverbench/

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mattn/go-sqlite3"

	"github.com/hopperq/hopper/internal/cputime"
	"github.com/hopperq/hopper/internal/sqlitedriver"
	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/sqlitestore"
)

type benchDriver struct {
	name string
	code func(error) (int, bool)
}

var benchDrivers = []benchDriver{
	{"modernc", sqlitedriver.Code},
	{"mattn", func(err error) (int, bool) {
		var e sqlite3.Error
		if errors.As(err, &e) {
			return int(e.ExtendedCode), true
		}
		return 0, false
	}},
}

// withDriver runs fn with the store opening connections through d. The
// driver is a variable of package sqlitedriver: what swaps it does not run
// in parallel.
func withDriver[T testing.TB](b T, d benchDriver, fn func(b T)) {
	name, code := sqlitedriver.Name, sqlitedriver.Code
	sqlitedriver.Name, sqlitedriver.Code = map[string]string{"modernc": "sqlite", "mattn": "sqlite3"}[d.name], d.code
	defer func() { sqlitedriver.Name, sqlitedriver.Code = name, code }()
	fn(b)
}

func benchOpen(b testing.TB, dur sqlitestore.Durability) *sqlitestore.Store {
	s, err := sqlitestore.Open(context.Background(), filepath.Join(b.TempDir(), "bench.db"), sqlitestore.Options{Durability: dur})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

var benchT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// cpuPerOp reports the process's CPU time per operation since start: on a
// shared machine it varies much less than the wall time.
func cpuPerOp(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(cputime.Process()-start)/float64(b.N), "cpu-ns/op")
}

func benchJobs(n int) []*job.Job {
	js := make([]*job.Job, n)
	for i := range js {
		j := &job.Job{Kind: "email", Queue: "default", MaxAttempts: 25, Args: []byte(`{"to":"someone@example.com","n":12345}`)}
		if err := j.Validate(benchT0); err != nil {
			panic(err)
		}
		js[i] = j
	}
	return js
}

func benchEnqueue(b testing.TB, s *sqlitestore.Store, js []*job.Job) {
	if _, err := s.Enqueue(context.Background(), store.EnqueueParams{Now: benchT0, Jobs: js}); err != nil {
		b.Fatal(err)
	}
}

func benchClaim(b testing.TB, s *sqlitestore.Store, n int) []*job.Job {
	res, err := s.Claim(context.Background(), store.ClaimParams{Now: benchT0, Limit: n, Worker: "w", LeaseUntil: benchT0.Add(time.Hour)})
	if err != nil {
		b.Fatal(err)
	}
	return res.Jobs
}

func benchFinish(b testing.TB, s *sqlitestore.Store, js []*job.Job) {
	outs := make([]store.Outcome, len(js))
	for i, j := range js {
		outs[i] = store.Outcome{ID: j.ID, Attempt: j.Attempt, Claim: j.Claims, State: job.StateCompleted, Result: []byte(`{"ok":true}`),
			Record: job.Attempt{Attempt: j.Attempt, StartedAt: j.StartedAt, Duration: time.Millisecond, Worker: "w", Outcome: "completed"}}
	}
	if _, err := s.Finish(context.Background(), store.FinishParams{Now: benchT0, Outcomes: outs}); err != nil {
		b.Fatal(err)
	}
}

func BenchmarkDriver(b *testing.B) {
	for _, d := range benchDrivers {
		b.Run(d.name, func(b *testing.B) {
			withDriver(b, d, func(b *testing.B) {
				b.Run("EnqueueBatch1000", func(b *testing.B) {
					s := benchOpen(b, sqlitestore.DurabilityFull)
					js := benchJobs(1000)
					b.ResetTimer()
					cpu := cputime.Process()
					for range b.N {
						benchEnqueue(b, s, js)
					}
					b.ReportMetric(float64(b.N*1000)/b.Elapsed().Seconds(), "jobs/s")
					cpuPerOp(b, cpu)
				})
				b.Run("Claim100", func(b *testing.B) {
					s := benchOpen(b, sqlitestore.DurabilityFull)
					js := benchJobs(1000)
					b.ResetTimer()
					var setup time.Duration
					cpu := cputime.Process()
					for i := range b.N {
						if i%10 == 0 {
							b.StopTimer()
							c := cputime.Process()
							benchEnqueue(b, s, js)
							setup += cputime.Process() - c
							b.StartTimer()
						}
						if got := benchClaim(b, s, 100); len(got) != 100 {
							b.Fatalf("claimed %d", len(got))
						}
					}
					cpuPerOp(b, cpu+setup)
				})
				b.Run("Finish100", func(b *testing.B) {
					s := benchOpen(b, sqlitestore.DurabilityFull)
					js := benchJobs(1000)
					b.ResetTimer()
					var setup time.Duration
					cpu := cputime.Process()
					for i := range b.N {
						b.StopTimer()
						c := cputime.Process()
						if i%10 == 0 {
							benchEnqueue(b, s, js)
						}
						claimed := benchClaim(b, s, 100)
						setup += cputime.Process() - c
						b.StartTimer()
						benchFinish(b, s, claimed)
					}
					cpuPerOp(b, cpu+setup)
				})
				for _, dur := range []sqlitestore.Durability{sqlitestore.DurabilityFull, sqlitestore.DurabilityNormal} {
					b.Run(fmt.Sprintf("EnqueueOne/%s", dur), func(b *testing.B) {
						s := benchOpen(b, dur)
						js := benchJobs(1)
						b.ResetTimer()
						cpu := cputime.Process()
						for range b.N {
							benchEnqueue(b, s, js)
						}
						cpuPerOp(b, cpu)
					})
				}
				b.Run("EnqueueConcurrent8", func(b *testing.B) {
					s := benchOpen(b, sqlitestore.DurabilityFull)
					b.SetParallelism(max(1, 8/runtime.GOMAXPROCS(0)))
					b.ResetTimer()
					cpu := cputime.Process()
					b.RunParallel(func(pb *testing.PB) {
						js := benchJobs(1)
						for pb.Next() {
							benchEnqueue(b, s, js)
						}
					})
					b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
					cpuPerOp(b, cpu)
				})
			})
		})
	}
}

// BenchmarkFloor is the least the single writer can do per job on Hopper's
// schema: the three row writes every job needs (insert, claim, finish to
// completed), for 100 jobs per transaction (BEGIN IMMEDIATE … COMMIT,
// fsynced), with the leanest statements that still keep the schema's
// indexes true — no attempt record, no result, no lane counts, no Go
// bookkeeping, and nothing else running ("floor"). Two more steps add what
// the store does beside: the claim returning whole rows, decoded by
// the store's scanJob ("+rows"), and then the finish through the store's own
// statement for completed outcomes, with each job's attempt record and the
// attempt fence ("+records"). Run with
//
//	go test -run '^$' -bench BenchmarkFloor -benchtime 2000x -count 3 ./driverbench/
//
// The floor's jobs/s bounds what the store can reach end to end with one
// writer (docs/sqlite.md, "The writer's floor").
func BenchmarkFloor(b *testing.B) {
	for _, d := range benchDrivers {
		for _, step := range []struct {
			name             string
			wholeRow, record bool
		}{{"floor", false, false}, {"+rows", true, false}, {"+records", true, true}} {
			b.Run(d.name+"/"+step.name, func(b *testing.B) {
				withDriver(b, d, func(b *testing.B) { benchFloor(b, step.wholeRow, step.record) })
			})
		}
	}
}

func benchFloor(b *testing.B, wholeRow, record bool) {
	path := filepath.Join(b.TempDir(), "floor.db")
	s, err := sqlitestore.Open(context.Background(), path, sqlitestore.Options{}) // the schema, migrated
	if err != nil {
		b.Fatal(err)
	}
	s.Close()
	db, err := sql.Open(sqlitedriver.Name, path)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	for _, q := range []string{"PRAGMA journal_mode = WAL", "PRAGMA synchronous = FULL", "PRAGMA temp_store = MEMORY"} {
		if _, err := db.Exec(q); err != nil {
			b.Fatal(err)
		}
	}
	row := "('email', 'default', '{\"to\":\"someone@example.com\",\"n\":12345}', 0, ?1, 'available', 25, ?1)"
	ins := `INSERT INTO jobs (kind, queue, args, priority, run_at, state, max_attempts, created_at) VALUES ` +
		strings.Repeat(row+", ", 99) + row
	returning := "id, attempt"
	if wholeRow {
		returning = sqlitedriver.Internals.JobCols
	}
	claim := `UPDATE jobs SET state = 'running', attempt = attempt + 1, started_at = ?1, lease_until = ?2,
		worker = 'w', claimed_by = 'me'
		WHERE id IN (SELECT id FROM jobs WHERE queue = 'default' AND kind = 'email' AND state = 'available'
			ORDER BY priority, run_at, id LIMIT 100) AND state = 'available'
		RETURNING ` + returning
	finish := `UPDATE jobs SET state = 'completed', worker = NULL, claimed_by = NULL, lease_until = 0,
		finished_at = ?1 WHERE id IN (SELECT value FROM json_each(?2)) AND state = 'running'`
	if record {
		finish = sqlitedriver.Internals.FinishDoneSQL(50)
	}
	var stmts [3]*sql.Stmt // prepared once, as the store's writer does
	for i, q := range []string{ins, claim, finish} {
		if stmts[i], err = db.Prepare(q); err != nil {
			b.Fatal(err)
		}
		defer stmts[i].Close()
	}
	now := benchT0.UnixNano()
	ids := make([]string, 0, 100)
	var jobs []*job.Job
	var args []any
	b.ResetTimer()
	cpu := cputime.Process()
	for range b.N {
		tx, err := db.Begin()
		if err != nil {
			b.Fatal(err)
		}
		if _, err := tx.Stmt(stmts[0]).Exec(now); err != nil {
			b.Fatal(err)
		}
		rows, err := tx.Stmt(stmts[1]).Query(now, now+int64(time.Hour))
		if err != nil {
			b.Fatal(err)
		}
		ids, jobs = ids[:0], jobs[:0]
		for rows.Next() {
			var id, attempt int64
			if wholeRow {
				j, err := sqlitedriver.Internals.ScanJob(rows)
				if err != nil {
					b.Fatal(err)
				}
				jobs = append(jobs, j)
				id, attempt = int64(j.ID), int64(j.Attempt)
			} else if err := rows.Scan(&id, &attempt); err != nil {
				b.Fatal(err)
			}
			ids = append(ids, strconv.FormatInt(id, 10))
		}
		if err := rows.Close(); err != nil || len(ids) != 100 {
			b.Fatalf("claimed %d: %v", len(ids), err)
		}
		finished := int64(0)
		if record {
			for half := range 2 { // the store's statements take up to 64 rows
				args = args[:0]
				for _, j := range jobs[50*half : 50*half+50] {
					rec, err := store.EncodeAttempt(job.Attempt{Attempt: j.Attempt, StartedAt: j.StartedAt,
						Duration: time.Millisecond, Worker: "w", Outcome: job.StateCompleted.String()})
					if err != nil {
						b.Fatal(err)
					}
					args = append(args, int64(j.ID), j.Attempt, j.Claims, nil, rec)
				}
				rows, err := tx.Stmt(stmts[2]).Query(append(args, now)...)
				if err != nil {
					b.Fatal(err)
				}
				for rows.Next() {
					finished++
				}
				rows.Close()
			}
		} else if n, err := tx.Stmt(stmts[2]).Exec(now, "["+strings.Join(ids, ",")+"]"); err != nil {
			b.Fatal(err)
		} else {
			finished, _ = n.RowsAffected()
		}
		if finished != 100 {
			b.Fatalf("finished %d", finished)
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*100)/b.Elapsed().Seconds(), "jobs/s")
	b.ReportMetric(float64(cputime.Process()-cpu)/float64(b.N*100), "cpu-ns/job")
}
