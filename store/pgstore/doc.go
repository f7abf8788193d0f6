// Package pgstore is Hopper's PostgreSQL store: jobs, schedules and leader
// leases in the tables of one schema of a PostgreSQL (15 or later)
// database, through pgx v5, shared by any number of processes on any
// number of hosts. docs/postgres.md describes its schema, its claim and
// locking order, wake-ups, leader election, clock, connections, PgBouncer
// mode, operations and measurements.
//
// Open opens a store by pgx connection string and Options; OpenURL, or
// store.Open once the package is imported, by URL:
//
//	import _ "github.com/hopperq/hopper/store/pgstore"
//
//	s, err := store.Open(ctx, "postgres://app@db:5432/app?sslmode=require&hopper_schema=jobs", store.OpenOptions{})
//
// Hopper's own URL parameters (hopper_schema, hopper_pgbouncer,
// hopper_migrate, hopper_poll_interval, hopper_pool_size, hopper_vacuum) are
// taken out before pgx reads the rest.
//
// The schema is a sequence of embedded migrations, applied by Migrate (and
// by a read-write Open unless Options.NoMigrate); a schema a newer Hopper
// migrated is refused. Every table is qualified with the schema
// (Options.Schema, default "hopper"), so that Hopper can live in the
// application's database; no statement depends on search_path or any
// session state.
//
// Claims lock with FOR UPDATE SKIP LOCKED, and each starts its index scan
// at the floor its queue's last claim left (floor.go), not at the front of
// the queue, where the entries of the jobs claimed before stay until
// VACUUM removes them — for as long as any older transaction is open.
//
// Besides store.Store, a Store implements store.Waker (LISTEN/NOTIFY on a
// dedicated connection, one notification per write, never per row, polling
// as a fallback), store.Pinger,
// store.Clock (the database server's clock as measured from this host),
// store.Leader (a lease row per name, fenced by a term), store.Identity and
// store.TxEnqueuer (enqueue inside the application's pgx.Tx).
package pgstore
