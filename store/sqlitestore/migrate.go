package sqlitestore

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"sync"

	"github.com/hopperq/hopper/store"
)

// The schema is a sequence of migrations, migrations/NNNN_name.sql, applied
// in order inside one transaction at Open. PRAGMA user_version holds the
// number of the last one applied; PRAGMA application_id marks the file as
// Hopper's.
//
//go:embed migrations/*.sql
var migrationFS embed.FS

// migrations returns the embedded migrations in order.
var migrations = sync.OnceValues(func() ([]store.Migration, error) {
	return store.ReadMigrations(migrationFS, "migrations")
})

// schemaVersion is the number of the last embedded migration.
var schemaVersion = sync.OnceValue(func() int {
	ms, err := migrations()
	if err != nil {
		panic(err)
	}
	return len(ms)
})

// rowQueryer is *sql.DB or *sql.Conn.
type rowQueryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// fileInfo is what identifies a database file.
type fileInfo struct {
	appID, version, tables int64
}

// empty reports whether the file has nothing in it yet (a new file).
func (f fileInfo) empty() bool { return f.appID == 0 && f.version == 0 && f.tables == 0 }

// readFileInfo reads the file's application_id, schema version and number
// of tables. Reading is the first thing Open does to the file, so a file
// that is not a database fails here, unchanged.
func readFileInfo(db rowQueryer) (f fileInfo, err error) {
	if err = db.QueryRowContext(bg, "PRAGMA application_id").Scan(&f.appID); err != nil {
		return
	}
	if err = db.QueryRowContext(bg, "PRAGMA user_version").Scan(&f.version); err != nil {
		return
	}
	err = db.QueryRowContext(bg, "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'").Scan(&f.tables)
	return
}

// checkKind fails unless the file is empty or Hopper's, of a schema
// version this build knows.
func (s *Store) checkKind(f fileInfo) error {
	if f.appID == applicationID || f.empty() {
		if int(f.version) > schemaVersion() {
			return fmt.Errorf("sqlitestore: %s: %w (file has version %d, this Hopper knows up to %d)",
				s.path, ErrSchemaTooNew, f.version, schemaVersion())
		}
		return nil
	}
	return fmt.Errorf("sqlitestore: %s: %w (it is a SQLite database of another application: application_id %#x, %d tables)",
		s.path, ErrNotDatabase, f.appID, f.tables)
}

// checkCurrent fails, for a read-only Open, unless the file's schema is
// this build's: a read-only Store never migrates.
func (s *Store) checkCurrent(f fileInfo) error {
	if int(f.version) < schemaVersion() {
		return fmt.Errorf("sqlitestore: %s: %w (file has version %d, this Hopper uses %d); a read-only open never migrates: "+
			"run `hopper migrate` (or `hopper serve`) once to upgrade the file", s.path, ErrSchemaTooOld, f.version, schemaVersion())
	}
	return nil
}

// checkFile checks, read-only, that the file can be Hopper's.
func (s *Store) checkFile() error {
	f, err := readFileInfo(s.w.conn)
	if err != nil {
		return s.translate(err)
	}
	return s.checkKind(f)
}

// applyMigrations runs the migrations after version on db.
func applyMigrations(db interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}, version int) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	for _, m := range ms[version:] {
		if _, err := db.ExecContext(bg, m.SQL); err != nil {
			return fmt.Errorf("migration %s: %w", m.Name, err)
		}
	}
	return nil
}

// migrate applies the migrations the file lacks, in one write transaction
// (another process may be migrating the same file: the checks are repeated
// under the lock).
func (s *Store) migrate() error {
	err := s.txn(func(w *writer) error {
		f, err := readFileInfo(w.conn)
		if err != nil {
			return err
		}
		if err := s.checkKind(f); err != nil {
			return err
		}
		if int(f.version) == schemaVersion() {
			return nil
		}
		if err := applyMigrations(w.conn, int(f.version)); err != nil {
			return err
		}
		for _, p := range []string{
			fmt.Sprintf("PRAGMA application_id = %d", applicationID),
			fmt.Sprintf("PRAGMA user_version = %d", schemaVersion()),
		} {
			if _, err := w.conn.ExecContext(bg, p); err != nil {
				return err
			}
		}
		return nil
	})
	return s.translate(err)
}
