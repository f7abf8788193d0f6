package sqlitestore

import (
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"strconv"
)

// Read-only Stores (Options.ReadOnly) read the file through the read pool
// only: no write connection, no writer or watcher goroutine, no lock file.
//
// SQLite needs the -wal and -shm files to read a WAL database with locks,
// and with mode=ro it creates them when they are missing (and leaves them
// behind). So:
//
//   - if both exist (a Store has the file open, or one died), the pool
//     opens the file with mode=ro: it reads the latest commits, under
//     SQLite's locks, while writers go on;
//   - otherwise no Store has the file open and everything is in the file
//     itself: the pool opens it with immutable=1, which needs no other
//     file, takes no lock and works in a directory we cannot write. The
//     price: SQLite assumes the file does not change. If a writer opens
//     the file while the read-only Store is open, its reads may miss the
//     new commits (they sit in the -wal, which immutable ignores) or, once
//     a checkpoint rewrites pages under them, fail with ErrNotDatabase;
//     reopen the Store to see the file as it is;
//   - if mode=ro cannot open the -wal and -shm files (not writable, and
//     not usable read-only), the pool falls back to immutable=1 and reads
//     the file as of its last checkpoint.
//
// A file that does not exist, is empty or has no tables is read as an
// empty in-memory database with the current schema, so every read
// returns nothing through the same code.

// openReadOnly opens s.rdb for a read-only Store.
func (s *Store) openReadOnly() error {
	fi, err := os.Stat(s.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return s.openEmpty()
	case err != nil:
		return fmt.Errorf("sqlitestore: %s: %w", s.path, err)
	case fi.IsDir():
		return fmt.Errorf("sqlitestore: %s: is a directory, not a database file", s.path)
	case fi.Size() == 0:
		return s.openEmpty()
	}
	var f fileInfo
	if exists(s.path+"-wal") && exists(s.path+"-shm") {
		f, err = s.openReader(false)
		if code, ok := driverCode(err); ok && (code&0xff == codeCantOpen || code&0xff == codeReadOnly) {
			s.rdb.Close()
			f, err = s.openReader(true)
		}
	} else {
		f, err = s.openReader(true)
	}
	if err != nil {
		return s.translate(err)
	}
	if err := s.checkKind(f); err != nil {
		return err
	}
	if f.empty() {
		s.rdb.Close()
		return s.openEmpty()
	}
	return s.checkCurrent(f)
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// openReader opens the read pool on the file, read-only (immutable or not),
// and reads what identifies the file.
func (s *Store) openReader(immutable bool) (fileInfo, error) {
	u := url.URL{Path: s.path}
	q := "mode=ro&_query_only=1&_busy_timeout=" + strconv.FormatInt(s.opts.BusyTimeout.Milliseconds(), 10)
	if immutable {
		q += "&immutable=1"
	}
	var err error
	if s.rdb, err = sql.Open(driverName(), "file:"+u.EscapedPath()+"?"+q); err != nil {
		return fileInfo{}, err
	}
	s.rdb.SetMaxOpenConns(readers)
	s.rdb.SetMaxIdleConns(readers)
	return readFileInfo(s.rdb)
}

// openEmpty makes the read pool one in-memory database with the current
// schema: a read-only Store of a file that does not exist yet.
func (s *Store) openEmpty() error {
	db, err := sql.Open(driverName(), ":memory:")
	if err != nil {
		return err
	}
	// One connection, kept for the Store's life: it is the database.
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	s.rdb = db
	if err := applyMigrations(db, 0); err != nil {
		return fmt.Errorf("sqlitestore: %s: empty schema: %w", s.path, err)
	}
	if _, err := db.ExecContext(bg, "PRAGMA query_only = 1"); err != nil {
		return fmt.Errorf("sqlitestore: %s: %w", s.path, err)
	}
	return nil
}
