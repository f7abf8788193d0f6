package pgstore

import (
	"context"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/jackc/pgx/v5"
)

// Which database a transaction is on. EnqueueTx refuses a transaction on
// another database than the Store's: its jobs would land in that
// database's schema of the same name (if it has one), out of the Store's
// sight, and EnqueueTx would return IDs no client could find.
//
// A database is named by its server's start time (pg_postmaster_start_time)
// and its OID: an OID is unique within a server, and two servers (hosts,
// ports, or clusters of one host) that started in the same microsecond do
// not occur in practice. Both are kept in the server's memory, so the check
// is one short query per EnqueueTx (pg_control_system's system identifier
// would be read from the control file on disk at every call). Addresses are
// no identity: one server is reached by several (a socket, localhost,
// PgBouncer). A restart of the server changes its start time, so before it
// refuses a transaction the Store reads its own database's identity again.

// dbIdentity names a database.
type dbIdentity struct {
	started time.Time // the server's start
	oid     uint32    // the database's OID on that server
	name    string    // for messages
}

func (a dbIdentity) same(b dbIdentity) bool { return a.oid == b.oid && a.started.Equal(b.started) }

const sqlIdentity = `SELECT pg_postmaster_start_time(), oid, datname FROM pg_database WHERE datname = current_database()`

// readIdentity returns the identity of the database q is on.
func readIdentity(ctx context.Context, q querier) (dbIdentity, error) {
	var id dbIdentity
	err := q.QueryRow(ctx, sqlIdentity).Scan(&id.started, &id.oid, &id.name)
	return id, err
}

// sameDatabase returns nil if tx is on the Store's database, else a
// *job.FieldError on "tx".
func (s *Store) sameDatabase(ctx context.Context, tx pgx.Tx) error {
	theirs, err := readIdentity(ctx, tx)
	if err != nil {
		return s.translate(err)
	}
	ours := s.ident.Load()
	if ours != nil && theirs.same(*ours) {
		return nil
	}
	// Our server may have restarted, or failed over, since: look again.
	fresh, err := readIdentity(ctx, s.pool)
	if err != nil {
		return s.translate(err)
	}
	s.ident.Store(&fresh)
	if theirs.same(fresh) {
		return nil
	}
	if theirs.name != fresh.name {
		return job.Invalid("tx", "is on database %q, not on the store's database %q: begin it on the store's database (Store.Pool().Begin, or a connection to the same database)", theirs.name, fresh.name)
	}
	return job.Invalid("tx", "is on a database %q of another server than the store's %q: begin it on the store's database (Store.Pool().Begin, or a connection to the same server)", theirs.name, fresh.name)
}
