package pgstore

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/hopperq/hopper/store"
	"github.com/jackc/pgx/v5"
)

// The schema is a sequence of migrations, migrations/NNNN_name.sql, applied
// in order, in one transaction, by Migrate (and by a read-write Open). The
// table {schema}.schema_migrations records each version applied.
//
//go:embed migrations/*.sql
var migrationFS embed.FS

// migrations returns the embedded migrations in order.
var migrations = sync.OnceValues(func() ([]store.Migration, error) {
	return store.ReadMigrations(migrationFS, "migrations")
})

// SchemaVersion returns the schema version this build of Hopper uses: the
// number of its last migration.
func SchemaVersion() int {
	ms, err := migrations()
	if err != nil {
		panic(err)
	}
	return len(ms)
}

// MigrateResult says what Migrate did.
type MigrateResult struct {
	Schema string
	// From is the version found (0: no schema), To the version left.
	From, To int
}

// Migrate creates Hopper's schema in the database rawURL names (a store
// URL, see OpenURL; its hopper_schema names the schema) or brings it up to
// this build's version, in one transaction. Several processes may run it at
// once: a transaction-level advisory lock serialises them, and the later
// ones find nothing to do. It fails with ErrSchemaTooNew, changing nothing,
// if a newer Hopper migrated the schema. It is what `hopper migrate` runs; a
// read-write Open does the same unless Options.NoMigrate.
func Migrate(ctx context.Context, rawURL string) (MigrateResult, error) {
	conn, schema, err := connectURL(ctx, rawURL)
	if err != nil {
		return MigrateResult{}, err
	}
	defer conn.Close(context.Background())
	return migrate(ctx, conn, schema)
}

// DropSchema drops the schema a store URL names (hopper_schema, default
// "hopper") with everything in it — jobs, schedules, leases — at once and
// for good: it is for throwaway schemas, such as hopper bench's and tests'.
// A schema that does not exist is not an error.
func DropSchema(ctx context.Context, rawURL string) error {
	conn, schema, err := connectURL(ctx, rawURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`); err != nil {
		return translate(schema, err)
	}
	return nil
}

// connectURL opens one connection (no pool) to the database of a store
// URL, in the URL's PgBouncer mode, and returns the schema it names.
func connectURL(ctx context.Context, rawURL string) (*pgx.Conn, string, error) {
	connString, opts, err := ParseURL(rawURL)
	if err != nil {
		return nil, "", err
	}
	cfg, err := pgx.ParseConfig(connString)
	if err != nil {
		return nil, "", fmt.Errorf("pgstore: connection string: %w", err)
	}
	if opts.PgBouncer {
		cfg.DefaultQueryExecMode = pgx.QueryExecModeExec
		cfg.StatementCacheCapacity, cfg.DescriptionCacheCapacity = 0, 0
	}
	schema := opts.Schema
	if schema == "" {
		schema = DefaultSchema
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, "", translate(schema, err)
	}
	return conn, schema, nil
}

// lockKey is the advisory lock of migrations of a schema.
const lockKey = `hashtextextended('hopper migrate ' || $1, 0)`

// migrate applies the migrations schema lacks, in one transaction.
func migrate(ctx context.Context, conn *pgx.Conn, schema string) (MigrateResult, error) {
	res := MigrateResult{Schema: schema}
	ms, err := migrations()
	if err != nil {
		return res, err
	}
	ident := quoteIdent(schema)
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(`+lockKey+`)`, schema); err != nil {
			return err
		}
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`, schema).Scan(&exists); err != nil {
			return err
		}
		if !exists {
			if _, err := tx.Exec(ctx, `CREATE SCHEMA `+ident); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+ident+`.schema_migrations (
			version    integer PRIMARY KEY,
			name       text NOT NULL,
			applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM `+ident+`.schema_migrations`).Scan(&res.From); err != nil {
			return err
		}
		res.To = res.From
		if res.From > len(ms) {
			return fmt.Errorf("pgstore: schema %q: %w (it has version %d, this Hopper knows up to %d)", schema, ErrSchemaTooNew, res.From, len(ms))
		}
		for _, m := range ms[res.From:] {
			if _, err := tx.Exec(ctx, strings.ReplaceAll(m.SQL, "{schema}", ident)); err != nil {
				return fmt.Errorf("pgstore: migration %s: %w", m.Name, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO `+ident+`.schema_migrations (version, name) VALUES ($1, $2)`, m.Version, m.Name); err != nil {
				return err
			}
			res.To = m.Version
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, ErrSchemaTooNew) {
			return res, err
		}
		return res, translate(schema, err)
	}
	return res, nil
}

// schemaVersionOf returns the version of schema, 0 if it has no Hopper
// schema (no schema, or no schema_migrations table). It only reads.
func schemaVersionOf(ctx context.Context, conn *pgx.Conn, schema string) (int, error) {
	var table *string
	if err := conn.QueryRow(ctx, `SELECT to_regclass($1)::text`, quoteIdent(schema)+".schema_migrations").Scan(&table); err != nil {
		return 0, err
	}
	if table == nil {
		return 0, nil
	}
	var v int
	err := conn.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM `+quoteIdent(schema)+`.schema_migrations`).Scan(&v)
	return v, err
}

// Ping implements store.Pinger: it returns nil when the server answers and
// the schema is this build's version, or an error saying what is wrong
// (ErrUnavailable, ErrNoSchema, ErrSchemaTooOld, ErrSchemaTooNew, …).
func (s *Store) Ping(ctx context.Context) error {
	if err := s.readable(); err != nil {
		return err
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return s.translate(err)
	}
	defer conn.Release()
	v, err := schemaVersionOf(ctx, conn.Conn(), s.schema)
	switch {
	case err != nil:
		return s.translate(err)
	case v == 0:
		return fmt.Errorf("pgstore: schema %q: %w", s.schema, ErrNoSchema)
	case v < SchemaVersion():
		return fmt.Errorf("pgstore: schema %q: %w (it has version %d, this Hopper uses %d)", s.schema, ErrSchemaTooOld, v, SchemaVersion())
	case v > SchemaVersion():
		return fmt.Errorf("pgstore: schema %q: %w (it has version %d, this Hopper knows up to %d)", s.schema, ErrSchemaTooNew, v, SchemaVersion())
	}
	return nil
}
