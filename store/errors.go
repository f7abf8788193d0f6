package store

import "errors"

// Errors every backend that keeps a schema returns, so that callers match
// them with errors.Is whatever the store (the backends' own names for them
// are these values).
var (
	// ErrReadOnly: the store was opened read-only (OpenOptions.ReadOnly),
	// or its database refuses writes.
	ErrReadOnly = errors.New("database is read-only")
	// ErrSchemaTooNew: the database's schema is newer than this binary
	// knows; use a newer Hopper.
	ErrSchemaTooNew = errors.New("database schema is newer than this version of Hopper supports")
	// ErrSchemaTooOld: the database's schema is older than this binary
	// uses, and a read-only open never migrates: run `hopper migrate`.
	ErrSchemaTooOld = errors.New("database schema is older than this version of Hopper uses")
	// ErrNoSchema: the database has no Hopper schema yet (a read-only
	// store of it reads as empty; Ping reports it, and a read-write open
	// creates it; an open with OpenOptions.MustExist fails with it).
	ErrNoSchema = errors.New("database has no Hopper schema yet")
)
