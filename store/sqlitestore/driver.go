package sqlitestore

import (
	"errors"

	"modernc.org/sqlite"
)

// The database/sql driver the store uses: modernc.org/sqlite, the pure-Go
// translation of SQLite. docs/sqlite.md records the measurements behind the
// choice; driverbench_test.go (build tag sqlitebench) repeats them against
// github.com/mattn/go-sqlite3 by swapping these two variables.
var (
	driverName = "sqlite"
	// driverCode returns the SQLite extended result code an error of the
	// driver carries.
	driverCode = func(err error) (int, bool) {
		var e *sqlite.Error
		if errors.As(err, &e) {
			return e.Code(), true
		}
		return 0, false
	}
)
