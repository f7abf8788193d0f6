package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// scaleFileDirect returns a closed database file of n jobs (a multiple of
// 1,000) holding the rows scaleFile writes through the API, built with SQL
// instead: 10M jobs through the API would take 5–10 minutes of Enqueue,
// Claim and Finish calls. The schema comes from Open (the migrations);
// then one connection, with the journal off and synchronous=OFF for the
// build only, inserts the final rows in ID order with INSERT … SELECT over
// a recursive CTE, 1M rows per transaction; the indexes and the
// AUTOINCREMENT sequence do their usual work, and lane_counts is filled
// from the jobs at the end (plus the zero counts of running jobs that the
// claims leave in lane_counts). The file
// is put back in WAL mode, fsynced and checked with the store itself
// (checkScaleFile).
//
// What scaleFile writes, batch b of 1,000 jobs (IDs 1000b+1 … 1000b+1000,
// k = 0…999 the index in the batch) in queue scaleQueues[b%4], each
// "send_email" with bJobs' args, priority k%3, created at bt0:
//
//   - k%10 = 9: scheduled, run at bt0 + (1+k) hours;
//   - otherwise available at bt0, and the first 600 of them in claim
//     order (priority, run_at, id) are claimed and completed at bt0. Each
//     batch has 300 available jobs of each priority, and earlier batches
//     of the queue left only jobs of priority 2, so the completed ones are
//     exactly those of priority 0 and 1: attempt 1, started and finished
//     at bt0, result {"ok":true}, one attempt record naming the building
//     Store's worker.
//
// TestScaleFileDirect compares the two builds of 3,000 jobs row by row.
func scaleFileDirect(tb testing.TB, n int) string {
	if n%1000 != 0 {
		tb.Fatalf("scaleFileDirect: %d jobs, not a multiple of 1,000", n)
	}
	return scaleCached(tb, scaleKey{n: n, direct: true}, func(path string) {
		s := bOpen(tb, path, Options{Durability: DurabilityNormal})
		worker := s.WorkerID()
		if err := s.Close(); err != nil {
			tb.Fatal(err)
		}
		// The values every row shares, encoded by the store's own code.
		tmpl, err := makeRows(bJobs(1, scaleQueues[0]))
		if err != nil {
			tb.Fatal(err)
		}
		a := tmpl.args // insertCols order
		kind, args, maxAttempts, timeout, unique, retry, created, schedule, fire :=
			a[0], a[2], a[6], a[7], a[8], a[9], a[10], a[11], a[12]
		rec, err := store.EncodeAttempt(job.Attempt{Attempt: 1, StartedAt: bt0, Duration: time.Millisecond,
			Worker: worker, Outcome: job.StateCompleted.String()})
		if err != nil {
			tb.Fatal(err)
		}
		var queue strings.Builder
		queue.WriteString("CASE i / 1000 % " + fmt.Sprint(len(scaleQueues)))
		for i, q := range scaleQueues {
			fmt.Fprintf(&queue, " WHEN %d THEN '%s'", i, q)
		}
		queue.WriteString(" END")

		bulkWrite(tb, path, func(exec func(q string, args ...any)) {
			insert := `WITH RECURSIVE x(i) AS (SELECT ?1 UNION ALL SELECT i + 1 FROM x WHERE i + 1 < ?2)
				INSERT INTO jobs (kind, queue, args, priority, run_at, state, max_attempts, attempt, timeout,
					unique_key, retry, result, last_error, attempts, created_at, started_at, finished_at,
					worker, lease_until, claimed_by, crashes, cancel_requested, schedule, fire_time, claims)
				SELECT ?3, q, ?4, k % 3, CASE st WHEN 'scheduled' THEN ?5 + (1 + k) * ?6 ELSE ?5 END,
					st, ?7, st = 'completed', ?8,
					?9, ?10, CASE st WHEN 'completed' THEN ?11 END, '', CASE st WHEN 'completed' THEN ?12 END,
					?13, CASE st WHEN 'completed' THEN ?5 ELSE 0 END, CASE st WHEN 'completed' THEN ?5 ELSE 0 END,
					NULL, 0, NULL, 0, 0, ?14, ?15, st = 'completed'
				FROM (SELECT i % 1000 AS k, ` + queue.String() + ` AS q,
					CASE WHEN i % 10 = 9 THEN 'scheduled' WHEN i % 1000 % 3 = 2 THEN 'available' ELSE 'completed' END AS st
					FROM x)`
			const chunk = 1_000_000
			for from := 0; from < n; from += chunk {
				exec("BEGIN")
				exec(insert, from, min(n, from+chunk), kind, args, store.UnixNanos(bt0), int64(time.Hour),
					maxAttempts, timeout, unique, retry, `{"ok":true}`, "["+rec+"]", created, schedule, fire)
				exec("COMMIT")
			}
			// The counts the store keeps; each lane's jobs went through
			// running, which left a zero count.
			exec(`INSERT INTO lane_counts (state, queue, kind, n)
				SELECT state, queue, kind, count(*) FROM jobs GROUP BY state, queue, kind`)
			exec(`INSERT INTO lane_counts (state, queue, kind, n)
				SELECT 'running', queue, kind, 0 FROM lane_counts WHERE state = 'completed'`)
		})
		// Write the file out now, rather than let the kernel write back
		// what is still dirty of it during the first benchmarks, under
		// their fsyncs.
		start := time.Now()
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err == nil {
			err = errors.Join(f.Sync(), f.Close())
		}
		if err != nil {
			tb.Fatal(err)
		}
		tb.Logf("fsync of %s: %s", path, time.Since(start).Round(time.Millisecond))
		checkScaleFile(tb, path, n)
	})
}

// checkScaleFile checks, with the store, a scale file of n jobs: the
// counts by queue and state that Stats reads from lane_counts, the IDs,
// and a claim of the 100 jobs that come first in claim order (put back
// afterwards).
func checkScaleFile(tb testing.TB, path string, n int) {
	ctx := context.Background()
	s := bOpen(tb, path, Options{})
	defer s.Close()
	want := make(map[string]map[job.State]int)
	var firstAvailable []job.ID // in claim order: all priority 2, run at bt0, by ID
	for b := range n / 1000 {
		q := scaleQueues[b%len(scaleQueues)]
		if want[q] == nil {
			want[q] = make(map[job.State]int)
		}
		want[q][job.StateCompleted] += 600
		want[q][job.StateAvailable] += 300
		want[q][job.StateScheduled] += 100
		for k := 0; k < 1000 && len(firstAvailable) < 100; k++ {
			if k%10 != 9 && k%3 == 2 {
				firstAvailable = append(firstAvailable, job.ID(b*1000+k+1))
			}
		}
	}
	st, err := s.Stats(ctx, store.StatsParams{Now: bt0, FinishedSince: bt0})
	if err != nil {
		tb.Fatal(err)
	}
	if got, w := fmt.Sprint(st.ByQueue), fmt.Sprint(want); got != w {
		tb.Fatalf("Stats.ByQueue = %s, want %s", got, w)
	}
	if got := st.Finished[job.StateCompleted]; got != n*6/10 {
		tb.Fatalf("Stats.Finished[completed] = %d, want %d", got, n*6/10)
	}
	var count, maxID, seq int64
	err = s.rdb.QueryRowContext(ctx, `SELECT count(*), max(id), (SELECT seq FROM sqlite_sequence WHERE name = 'jobs') FROM jobs`).
		Scan(&count, &maxID, &seq)
	if err != nil {
		tb.Fatal(err)
	}
	if count != int64(n) || maxID != int64(n) || seq != int64(n) {
		tb.Fatalf("%d jobs, highest ID %d, sequence %d; want %d of each", count, maxID, seq, n)
	}
	claimed := bClaim(tb, s, 100)
	for i, j := range claimed {
		if j.ID != firstAvailable[i] || j.State != job.StateRunning || j.Attempt != 1 || j.Kind != "send_email" {
			tb.Fatalf("claimed job %d: ID %d (want %d), %s, attempt %d, kind %q", i, j.ID, firstAvailable[i], j.State, j.Attempt, j.Kind)
		}
	}
	bUnclaim(tb, s, claimed)
}

// TestScaleFileDirect checks that scaleFileDirect writes what scaleFile
// writes through the API: the same rows (every column and its type; the
// attempt records differ only in the building Store's worker ID), the same
// lane_counts and sequence, the same schema and header fields (the free
// pages aside), and a file that passes integrity_check.
func TestScaleFileDirect(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two 3k-job files")
	}
	t.Parallel()
	const n = 3_000
	api, direct := scaleFile(t, n), scaleFileDirect(t, n)
	checkScaleFile(t, api, n)

	db, err := sql.Open(driverName(), "file:"+api)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, "ATTACH ? AS d", direct); err != nil {
		t.Fatal(err)
	}
	var cols []string
	rows, err := db.QueryContext(ctx, "SELECT name FROM pragma_table_info('jobs') ORDER BY cid")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			t.Fatal(err)
		}
		if c == "attempts" {
			c = "replace(attempts, attempts ->> '$[0].worker', 'W')"
		}
		cols = append(cols, c, "typeof("+c+")")
	}
	rows.Close()
	if len(cols) != 2*32 {
		t.Fatalf("jobs has %d columns, want 32", len(cols)/2)
	}
	list := strings.Join(cols, ", ")
	for _, c := range []struct{ what, a, b string }{
		{"jobs", "SELECT " + list + " FROM main.jobs", "SELECT " + list + " FROM d.jobs"},
		{"lane_counts", "SELECT * FROM main.lane_counts", "SELECT * FROM d.lane_counts"},
		{"sqlite_sequence", "SELECT * FROM main.sqlite_sequence", "SELECT * FROM d.sqlite_sequence"},
		{"schema", "SELECT type, name, tbl_name, sql FROM main.sqlite_schema", "SELECT type, name, tbl_name, sql FROM d.sqlite_schema"},
	} {
		var count, onlyA, onlyB int
		err := db.QueryRowContext(ctx, fmt.Sprintf(`SELECT (SELECT count(*) FROM (%[1]s)),
			(SELECT count(*) FROM (%[1]s EXCEPT %[2]s)), (SELECT count(*) FROM (%[2]s EXCEPT %[1]s))`, c.a, c.b)).
			Scan(&count, &onlyA, &onlyB)
		if err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
		if count == 0 || onlyA != 0 || onlyB != 0 {
			t.Errorf("%s: %d rows through the API, %d of them not in the direct build, %d of the direct build's not among them",
				c.what, count, onlyA, onlyB)
		}
	}
	for _, pragma := range []string{"application_id", "user_version", "journal_mode", "auto_vacuum", "page_size", "freelist_count"} {
		var a, b string
		if err := db.QueryRowContext(ctx, "PRAGMA main."+pragma).Scan(&a); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRowContext(ctx, "PRAGMA d."+pragma).Scan(&b); err != nil {
			t.Fatal(err)
		}
		if a != b && pragma != "freelist_count" {
			t.Errorf("%s: %s through the API, %s in the direct build", pragma, a, b)
		}
		t.Logf("%s: %s through the API, %s in the direct build", pragma, a, b)
	}
	for _, schema := range []string{"main", "d"} {
		var res string
		if err := db.QueryRowContext(ctx, "PRAGMA "+schema+".integrity_check").Scan(&res); err != nil || res != "ok" {
			t.Errorf("%s: integrity_check: %q, %v", schema, res, err)
		}
	}
}

// bulkWrite runs build on one raw connection to the store file at path,
// relaxed for a bulk build — no rollback journal, no fsync, a 256 MiB page
// cache; a crash leaves a broken temporary file — with an exec that fails
// tb on an error, and then puts the file back in WAL mode, as the store
// leaves it.
func bulkWrite(tb testing.TB, path string, build func(exec func(q string, args ...any))) {
	tb.Helper()
	ctx := context.Background()
	db, err := sql.Open(driverName(), "file:"+path)
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Close()
	exec := func(q string, args ...any) {
		tb.Helper()
		if _, err := conn.ExecContext(ctx, q, args...); err != nil {
			tb.Fatalf("%s: %v", strings.SplitN(q, "\n", 2)[0], err)
		}
	}
	exec("PRAGMA journal_mode = OFF")
	exec("PRAGMA synchronous = OFF")
	exec("PRAGMA cache_size = -262144")
	build(exec)
	var mode string
	if err := conn.QueryRowContext(ctx, "PRAGMA journal_mode = WAL").Scan(&mode); err != nil || mode != "wal" {
		tb.Fatalf("journal_mode = WAL: %q, %v", mode, err)
	}
	conn.Close()
	if err := db.Close(); err != nil {
		tb.Fatal(err)
	}
}
