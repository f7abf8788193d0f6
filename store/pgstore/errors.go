package pgstore

import (
	"context"
	"errors"
	"fmt"
	"github.com/hopperq/hopper/store"
	"net"
	"strings"

	"github.com/hopperq/hopper/job"
	"github.com/jackc/pgx/v5/pgconn"
)

// Errors for conditions of the database a caller may want to act on. Store
// methods wrap them (errors.Is works) with the server's own message.
var (
	// ErrReadOnly means a write was attempted on a Store opened with
	// Options.ReadOnly (or the server refused a write as read-only).
	ErrReadOnly = store.ErrReadOnly
	// ErrSchemaTooNew means a newer Hopper migrated the schema to a version
	// this build does not know.
	ErrSchemaTooNew = store.ErrSchemaTooNew
	// ErrSchemaTooOld means the schema is older than this build's and the
	// Store may not migrate it (Options.ReadOnly or Options.NoMigrate).
	ErrSchemaTooOld = store.ErrSchemaTooOld
	// ErrNoSchema means the schema does not exist, or has no Hopper tables,
	// and the Store may not create it (Options.NoMigrate).
	ErrNoSchema = store.ErrNoSchema
	// ErrTooManyConnections means the server refused a connection because
	// all of its connection slots are taken (max_connections).
	ErrTooManyConnections = errors.New("the server has no connection slot left")
	// ErrUnavailable means the server could not be reached or refused the
	// connection (down, starting up, shutting down, wrong address).
	ErrUnavailable = errors.New("cannot connect to PostgreSQL")
)

// PostgreSQL error codes (SQLSTATE) translated below.
const (
	codeUniqueViolation   = "23505"
	codeSerialization     = "40001"
	codeDeadlock          = "40P01"
	codeReadOnlyTxn       = "25006"
	codeTooManyConns      = "53300"
	codeCannotConnectNow  = "57P03"
	codeAdminShutdown     = "57P01"
	codeUndefinedTable    = "42P01"
	codeInvalidSchemaName = "3F000"
	codeUndefinedObject   = "42704"
	codeQueryCanceled     = "57014"
	codeLockNotAvailable  = "55P03"
)

// translate turns a pgx error into a domain error of package job or one of
// the errors above, keeping the server's message. Errors that do not come
// from pgx (domain errors, context errors, ours) are returned unchanged.
func (s *Store) translate(err error) error {
	if err == nil {
		return nil
	}
	if s.closed.Load() && !errors.Is(err, job.ErrClosed) && isPoolClosed(err) {
		return job.ErrClosed
	}
	return translate(s.schema, err)
}

func isPoolClosed(err error) bool {
	return strings.Contains(err.Error(), "closed pool") || strings.Contains(err.Error(), "conn closed")
}

// translated marks an error translate made, so that an error translated
// on its way up is not translated (and prefixed) again.
type translated struct{ error }

func (t translated) Unwrap() error { return t.error }

func translate(schema string, err error) error {
	if errors.As(err, new(translated)) {
		return err
	}
	if out := translateOnce(schema, err); out != err {
		return translated{out}
	}
	return err
}

func translateOnce(schema string, err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case codeUniqueViolation:
			return fmt.Errorf("pgstore: %s (%s): %w", pe.Message, pe.ConstraintName, job.ErrDuplicate)
		case codeSerialization, codeDeadlock:
			return fmt.Errorf("pgstore: %s: %w", pe.Message, job.ErrConflict)
		case codeReadOnlyTxn:
			return fmt.Errorf("pgstore: %w: %s", ErrReadOnly, pe.Message)
		case codeTooManyConns:
			return tooManyConnections(err)
		case codeCannotConnectNow, codeAdminShutdown:
			return fmt.Errorf("pgstore: %w: %w", ErrUnavailable, err)
		case codeUndefinedTable, codeInvalidSchemaName, codeUndefinedObject:
			return fmt.Errorf("pgstore: schema %q: %w (run `hopper migrate`, or open the store read-write once): %w", schema, ErrNoSchema, err)
		case codeQueryCanceled:
			return fmt.Errorf("pgstore: %w", err)
		}
		return fmt.Errorf("pgstore: %w", err)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		var inner *pgconn.PgError
		if errors.As(ce, &inner) && inner.Code == codeTooManyConns {
			return tooManyConnections(err)
		}
		return fmt.Errorf("pgstore: %w: %w", ErrUnavailable, err)
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return fmt.Errorf("pgstore: %w: %w", ErrUnavailable, err)
	}
	return err
}

// tooManyConnections explains a refused connection, naming the limit that
// refused it: the role's or the database's CONNECTION LIMIT, or the
// server's max_connections.
func tooManyConnections(err error) error {
	limit := "raise the server's max_connections (minus superuser_reserved_connections)"
	switch msg := err.Error(); {
	case strings.Contains(msg, "for role"):
		limit = "raise the role's CONNECTION LIMIT (ALTER ROLE … CONNECTION LIMIT n)"
	case strings.Contains(msg, "for database"):
		limit = "raise the database's CONNECTION LIMIT (ALTER DATABASE … CONNECTION LIMIT n)"
	}
	return fmt.Errorf("pgstore: %w: %w; every Hopper process holds its pool (Options.PoolSize, hopper_pool_size, "+
		"default %d) plus one LISTEN connection: %s, lower hopper_pool_size, or put PgBouncer in front (hopper_pgbouncer=true)",
		ErrTooManyConnections, err, DefaultPoolSize, limit)
}
