package sqlitestore

import (
	"errors"
	"fmt"
	"github.com/hopperq/hopper/store"
)

// Errors for the conditions of the SQLite file a caller may want to act on.
// Store methods wrap them (errors.Is works) with the file's path and the
// driver's own message; other driver errors are wrapped with the path only.
var (
	// ErrLocked means another process held the database's write lock for
	// longer than Options.BusyTimeout.
	ErrLocked = errors.New("database file is locked by another process (busy timeout exceeded)")
	// ErrNotDatabase means the file is not a SQLite database, is a SQLite
	// database of another application, or is corrupted.
	ErrNotDatabase = errors.New("file is not a Hopper/SQLite database or is corrupted")
	// ErrDiskFull means a write failed because the disk (or the database's
	// size limit) is full; nothing of the failed operation was stored.
	ErrDiskFull = errors.New("disk full: the database could not grow, nothing was written")
	// ErrReadOnly means a write failed because the Store was opened with
	// Options.ReadOnly, or because the database file, its directory or its
	// file system cannot be written.
	ErrReadOnly = store.ErrReadOnly
	// ErrSchemaTooNew means the file was written by a newer Hopper with a
	// schema this version does not know.
	ErrSchemaTooNew = store.ErrSchemaTooNew
	// ErrSchemaTooOld means a read-only Open found a file whose schema is
	// older than this version's: only a read-write Open migrates it.
	ErrSchemaTooOld = store.ErrSchemaTooOld
)

// Primary SQLite result codes (the low byte of an extended code).
const (
	codeBusy     = 5
	codeLocked   = 6
	codeReadOnly = 8
	codeCorrupt  = 11
	codeFull     = 13
	codeCantOpen = 14
	codeNotADB   = 26
)

// translate turns a driver error into one of the errors above, naming path.
// Errors that do not come from the driver (job's domain errors, context
// errors, ours) are returned unchanged.
func translate(path string, err error) error {
	if err == nil {
		return nil
	}
	code, ok := driverCode(err)
	if !ok {
		return err
	}
	return translateCode(path, code, err)
}

// translateCode maps the SQLite result code of err (primary or extended).
func translateCode(path string, code int, err error) error {
	var kind error
	switch code & 0xff {
	case codeBusy, codeLocked:
		kind = ErrLocked
	case codeNotADB, codeCorrupt:
		kind = ErrNotDatabase
	case codeFull:
		kind = ErrDiskFull
	case codeReadOnly:
		return fmt.Errorf("sqlitestore: %s: %w (check the permissions of the file, its -wal and -shm files and its directory): %w", path, ErrReadOnly, err)
	case codeCantOpen:
		return fmt.Errorf("sqlitestore: %s: cannot open the database file (does its directory exist and is it writable?): %w", path, err)
	default:
		return fmt.Errorf("sqlitestore: %s: %w", path, err)
	}
	return fmt.Errorf("sqlitestore: %s: %w: %w", path, kind, err)
}
