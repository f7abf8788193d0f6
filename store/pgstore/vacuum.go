package pgstore

import (
	"context"
	"time"
)

// Self-vacuum. A queue table churns: every job is inserted, updated two or
// three times and deleted, and each update leaves a dead row version and
// dead entries in the partial indexes; the claim index collects them at its
// front, where every claim walks. The migration gives the jobs table
// aggressive per-table autovacuum settings (vacuum at 2% dead rows,
// unthrottled), so that the server's defaults need no tuning. But when
// autovacuum is off — server-wide (autovacuum = off) or for the table —
// those settings do nothing and dead entries pile up for ever (measured
// here: a claim walking 20,000 dead entries took 4 ms to find its first
// job). Then each read-write Store checks the table every vacuumInterval
// and, when its dead rows pass the same threshold, runs VACUUM on it
// itself; a session advisory lock makes one process at a time do it.
// Options.NoVacuum turns this off; in PgBouncer mode (no session state
// for the lock) it is off too.

// vacuumInterval is how often a Store checks whether the jobs table needs
// a vacuum autovacuum will not run.
const vacuumInterval = 30 * time.Second

// sqlNeedsVacuum reports whether autovacuum is off for the jobs table and
// its dead rows passed the per-table threshold (1,000 + 2% of the live
// rows).
const sqlNeedsVacuum = `SELECT (current_setting('autovacuum') = 'off'
		OR coalesce((SELECT option_value::bool FROM pg_options_to_table(c.reloptions)
			WHERE option_name = 'autovacuum_enabled'), true) = false)
	AND s.n_dead_tup > 1000 + 0.02 * s.n_live_tup
	FROM pg_class c JOIN pg_stat_user_tables s ON s.relid = c.oid
	WHERE c.oid = to_regclass($1)`

// vacuumer runs vacuumOnce every vacuumInterval until the Store closes.
func (s *Store) vacuumer() {
	defer s.wg.Done()
	t := time.NewTicker(vacuumInterval)
	defer t.Stop()
	for {
		select {
		case <-s.run.Done():
			return
		case <-t.C:
		}
		s.vacuumOnce(s.run) //nolint:errcheck // the next round tries again
	}
}

// vacuumOnce vacuums the jobs table if autovacuum is off for it and it
// needs it, unless another process is doing it. It reports whether it did.
func (s *Store) vacuumOnce(ctx context.Context) (bool, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return false, err
	}
	defer conn.Release()
	table := quoteIdent(s.schema) + ".jobs"
	var need *bool
	if err := conn.QueryRow(ctx, sqlNeedsVacuum, table).Scan(&need); err != nil || need == nil || !*need {
		return false, err
	}
	var locked bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(hashtextextended('hopper vacuum ' || $1, 0))`, s.schema).Scan(&locked); err != nil || !locked {
		return false, err
	}
	defer conn.Exec(context.Background(), `SELECT pg_advisory_unlock(hashtextextended('hopper vacuum ' || $1, 0))`, s.schema) //nolint:errcheck // the session lock ends with the session anyway
	// INDEX_CLEANUP ON: the dead entries of the claim index are what
	// matters, and VACUUM may skip the indexes when few heap pages have
	// dead rows.
	if _, err := conn.Exec(ctx, `VACUUM (INDEX_CLEANUP ON) `+table); err != nil {
		return false, err
	}
	return true, nil
}
