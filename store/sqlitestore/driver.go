package sqlitestore

import (
	"github.com/hopperq/hopper/internal/sqlitedriver"
	"github.com/hopperq/hopper/job"
)

// The database/sql driver the store uses is named in package sqlitedriver
// (modernc.org/sqlite, pure Go); the driver benchmark (module
// internal/heavytest) swaps it there for github.com/mattn/go-sqlite3.

// driverName is the database/sql name of the store's driver.
func driverName() string { return sqlitedriver.Name }

// driverCode returns the SQLite extended result code an error of the driver
// carries.
func driverCode(err error) (int, bool) { return sqlitedriver.Code(err) }

func init() {
	in := &sqlitedriver.Internals
	in.JobCols = jobCols
	in.ScanJob = func(r interface{ Scan(...any) error }) (*job.Job, error) { return scanJob(r) }
	in.FinishDoneSQL = func(n int) string { return finishDoneSQL[n] }
}
