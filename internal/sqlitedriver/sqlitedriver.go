// Package sqlitedriver names the database/sql driver the SQLite store
// (store/sqlitestore) opens its connections with: modernc.org/sqlite, the
// pure-Go translation of SQLite. docs/sqlite.md records the measurements
// behind the choice.
//
// The choice lives here, outside package sqlitestore, so that the driver
// benchmark can re-measure it: it swaps in github.com/mattn/go-sqlite3
// (cgo) from the nested module internal/heavytest, whose dependencies a
// program using Hopper never gets. For the same benchmark the store sets
// Internals, the few of its own pieces the writer's floor measures.
package sqlitedriver

import (
	"errors"

	"modernc.org/sqlite"

	"github.com/hopperq/hopper/job"
)

var (
	// Name is the database/sql name of the driver the store opens.
	Name = "sqlite"
	// Code returns the SQLite extended result code an error of the driver
	// carries, and false for an error that is not the driver's.
	Code = func(err error) (int, bool) {
		var e *sqlite.Error
		if errors.As(err, &e) {
			return e.Code(), true
		}
		return 0, false
	}
)

// Internals are the pieces of package sqlitestore that the driver
// benchmark's writer floor runs on their own; sqlitestore sets them when it
// is initialised. Nothing else reads them.
var Internals struct {
	// JobCols is the column list every job query selects.
	JobCols string
	// ScanJob reads one row selected with JobCols.
	ScanJob func(interface{ Scan(...any) error }) (*job.Job, error)
	// FinishDoneSQL returns the statement that finishes n running jobs
	// (1 <= n <= 64) as completed, fenced by claim and attempt, writing
	// each one's attempt record: 5 arguments per job (ID, attempt, claim,
	// result, record), then the time.
	FinishDoneSQL func(n int) string
}
