package sqlitestore

import (
	"embed"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"
)

// The schema is a sequence of migrations, migrations/NNNN_name.sql, applied
// in order inside one transaction at Open. PRAGMA user_version holds the
// number of the last one applied; PRAGMA application_id marks the file as
// Hopper's.
//
//go:embed migrations/*.sql
var migrationFS embed.FS

type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the embedded migrations in order.
func migrations() ([]migration, error) {
	entries, err := migrationFS.ReadDir("migrations")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: name must start with a positive number and _", e.Name())
		}
		b, err := migrationFS.ReadFile(path.Join("migrations", e.Name()))
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: e.Name(), sql: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i, m := range ms {
		if m.version != i+1 {
			return nil, fmt.Errorf("migration %s: expected number %d", m.name, i+1)
		}
	}
	return ms, nil
}

// schemaVersion is the number of the last embedded migration.
func schemaVersion() int {
	ms, err := migrations()
	if err != nil {
		panic(err)
	}
	return len(ms)
}

// fileKind reads what identifies the file: its application_id, schema
// version and number of tables. Reading is the first thing Open does to
// the file, so a file that is not a database fails here, unchanged.
func (s *Store) fileKind() (appID, version, tables int64, err error) {
	w := s.w
	if err = w.scanRow("PRAGMA application_id", nil, &appID); err != nil {
		return
	}
	if err = w.scanRow("PRAGMA user_version", nil, &version); err != nil {
		return
	}
	err = w.scanRow("SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'", nil, &tables)
	return
}

// checkKind fails unless the file is empty or Hopper's.
func (s *Store) checkKind(appID, version, tables int64) error {
	if appID == applicationID || (appID == 0 && version == 0 && tables == 0) {
		if int(version) > schemaVersion() {
			return fmt.Errorf("sqlitestore: %s: %w (file has version %d, this Hopper knows up to %d)",
				s.path, ErrSchemaTooNew, version, schemaVersion())
		}
		return nil
	}
	return fmt.Errorf("sqlitestore: %s: %w (it is a SQLite database of another application: application_id %#x, %d tables)",
		s.path, ErrNotDatabase, appID, tables)
}

// checkFile checks, read-only, that the file can be Hopper's.
func (s *Store) checkFile() error {
	appID, version, tables, err := s.fileKind()
	if err != nil {
		return s.translate(err)
	}
	return s.checkKind(appID, version, tables)
}

// migrate applies the migrations the file lacks, in one write transaction
// (another process may be migrating the same file: the checks are repeated
// under the lock).
func (s *Store) migrate() error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	err = s.txn(func(w *writer) error {
		appID, version, tables, err := s.fileKind()
		if err != nil {
			return err
		}
		if err := s.checkKind(appID, version, tables); err != nil {
			return err
		}
		for _, m := range ms[version:] {
			if _, err := w.conn.ExecContext(bg, m.sql); err != nil {
				return fmt.Errorf("migration %s: %w", m.name, err)
			}
		}
		if int(version) == len(ms) {
			return nil
		}
		for _, p := range []string{
			fmt.Sprintf("PRAGMA application_id = %d", applicationID),
			fmt.Sprintf("PRAGMA user_version = %d", len(ms)),
		} {
			if _, err := w.conn.ExecContext(bg, p); err != nil {
				return err
			}
		}
		return nil
	})
	return s.translate(err)
}
