// Package driverbench compares the SQLite store on its driver,
// modernc.org/sqlite (pure Go), with github.com/mattn/go-sqlite3 (cgo):
// the benchmarks behind docs/sqlite.md's choice of driver and its
// measurement of the writer's floor. It lives in the nested module
// internal/heavytest so that the library's module does not require
// mattn/go-sqlite3 and cgo.
package driverbench
