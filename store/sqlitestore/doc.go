// Package sqlitestore is Hopper's embedded durable store: jobs and schedules
// in one SQLite file, through modernc.org/sqlite (pure Go, no cgo).
//
// Open opens a file by path; OpenURL, or store.Open once the package is
// imported, opens one by URL: "sqlite:hopper.db" (relative),
// "sqlite:/abs/hopper.db" or "sqlite:///abs/hopper.db" (absolute),
// "sqlite://rel/hopper.db", each optionally followed by
// "?durability=normal" or "?durability=full".
//
// Schema: embedded migrations, applied at Open, upgrade an older file in
// place. States are stored by name ('available', …), never by number, and
// the JSON columns (attempt history, retry policies) have an encoding of
// their own, independent of the public JSON of job.Attempt and
// backoff.Policy. Jobs wait in lanes, one per (queue, kind): a claim merges
// the first jobs of each lane matching its queues and kinds.
//
// Durability: the file is in WAL mode; with DurabilityFull (the default)
// every method returns only after its transaction is fsynced, with
// DurabilityNormal after it is in the WAL (it survives kill -9, not a power
// loss).
//
// Group commit: all writes of a Store go through one goroutine owning one
// write connection, which runs every request queued at that moment in one
// transaction (BEGIN IMMEDIATE … COMMIT), each request in its own SAVEPOINT
// so that a failing request rolls back alone; the plain Enqueues of a batch
// (no unique key, no schedule) are inserted together by one multi-row
// INSERT. The job counts by (state, queue, kind) that Stats, Count and
// Claim read (lane_counts) are kept by the writer: each transaction's
// changes, summed in Go, are written once before its COMMIT. One fsync thus
// acknowledges many operations. Reads (Get, List, Count, Stats,
// GetSchedule, ListSchedules) use a separate pool of read-only connections.
//
// Several processes may open the same file and work together: every claim is
// one write transaction, so no job is claimed twice. Wake signals, within
// about Options.WatchInterval, that another process committed. Each open
// Store holds a lock (a flock; on Windows, LockFileEx) on
// <file>-workers/<worker>.lock; the jobs of a Store whose process died (its
// lock file is no longer locked) are rescued at once by Open or Rescue
// rather than when their leases expire. Lead and Resign (store.Leader) elect
// one of the processes to run the maintenance services, through a table of
// leases written like any other request.
//
// EnqueueTx (store.TxEnqueuer) enqueues in a *sql.Tx of the application's
// own on the same file, so that the jobs exist if and only if it commits;
// docs/sqlite.md lists what the application's connections need.
//
// Read-only mode (Options.ReadOnly) is for inspection: it never migrates,
// writes or creates a file, works on files and directories it may not
// write, reads a missing or empty file as an empty store, and fails every
// write with ErrReadOnly.
//
// Driver errors are translated at the boundary: ErrLocked, ErrNotDatabase,
// ErrDiskFull, ErrReadOnly, ErrSchemaTooNew and ErrSchemaTooOld wrap the
// conditions callers may act on. docs/sqlite.md describes the schema, the
// driver choice and the measurements.
package sqlitestore
