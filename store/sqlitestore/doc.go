// Package sqlitestore is Hopper's embedded durable store: jobs and schedules
// in one SQLite file, through modernc.org/sqlite (pure Go, no cgo).
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
// INSERT. One fsync thus acknowledges many operations. Reads (Get, List, Stats, GetSchedule, ListSchedules) use
// a separate pool of read-only connections.
//
// Several processes may open the same file and work together: every claim
// is one write transaction, so no job is claimed twice. Wake signals,
// within about Options.WatchInterval, that another process committed. Each
// open Store holds a flock on <file>-workers/<worker>.lock; the jobs of a
// Store whose process died (its lock file is no longer locked) are rescued
// at once by Open or Rescue rather than when their leases expire.
//
// Driver errors are translated at the boundary: ErrLocked, ErrNotDatabase,
// ErrDiskFull, ErrReadOnly and ErrSchemaTooNew wrap the conditions callers
// may act on. docs/sqlite.md describes the schema, the driver choice and
// the measurements.
package sqlitestore
