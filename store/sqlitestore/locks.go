package sqlitestore

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Lock files tell live Stores from dead ones.
//
// Every open Store holds an exclusive lock on <path>-workers/<worker>.lock
// for its whole life: a flock on Unix (locks_flock.go), a LockFileEx lock on
// Windows (locks_windows.go). The system drops the lock when its holder's
// process dies, however it dies (kill -9 or TerminateProcess included), so
// a lock file that another process can lock belongs to a dead Store: the
// jobs it claimed (column claimed_by) will never be finished and their
// leases are expired at once. A lock file that cannot be locked belongs to
// a live Store whose jobs are left alone until their leases expire.
//
// Both locks conflict between two open files of one process too, so one
// process cannot open two Stores with the same worker ID either.

// lockDir is the directory of the lock files.
func (s *Store) lockDir() string { return s.path + "-workers" }

// lockFileName is the file name of a worker's lock file.
func lockFileName(worker string) string { return url.PathEscape(worker) + ".lock" }

// workerOfLockFile is the inverse of lockFileName.
func workerOfLockFile(name string) (string, bool) {
	base, ok := strings.CutSuffix(name, ".lock")
	if !ok {
		return "", false
	}
	w, err := url.PathUnescape(base)
	return w, err == nil && w != ""
}

// stillAt reports whether f is still the file at path (a scanner may have
// removed a stale lock file between our open and our lock).
func stillAt(f *os.File, path string) bool {
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	pi, err := os.Stat(path)
	return err == nil && os.SameFile(fi, pi)
}

// acquireLock creates and locks worker's lock file. Another Store holding
// it (or a scanner removing it as stale) makes it retry until timeout.
func acquireLock(dir, worker string, timeout time.Duration) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating lock directory: %w", err)
	}
	path := filepath.Join(dir, lockFileName(worker))
	deadline := time.Now().Add(timeout)
	for {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, fmt.Errorf("creating lock file: %w", err)
		}
		locked, err := tryLock(f)
		if locked && stillAt(f, path) {
			host, _ := os.Hostname()
			f.Truncate(0)
			f.WriteAt([]byte("pid "+strconv.Itoa(os.Getpid())+" host "+host+"\n"), 0)
			return f, nil
		}
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("locking %s: %w", path, err)
		}
		if !locked && time.Now().After(deadline) {
			return nil, fmt.Errorf("worker ID %q is in use by another open store (%s is locked)", worker, path)
		}
		if !locked {
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// staleLock is the lock file of a dead Store, locked by us.
type staleLock struct {
	worker string
	f      *os.File
}

// findStale returns the lock files in dir whose Store is dead, locked, so
// that a Store starting with the same worker ID waits until we are done.
// It skips self, our own.
func findStale(dir, self string) []staleLock {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []staleLock
	for _, e := range entries {
		worker, ok := workerOfLockFile(e.Name())
		if !ok || worker == self || e.IsDir() {
			continue
		}
		path := filepath.Join(dir, e.Name())
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			continue
		}
		if locked, _ := tryLock(f); !locked || !stillAt(f, path) {
			f.Close() // alive, or already removed
			continue
		}
		out = append(out, staleLock{worker: worker, f: f})
	}
	return out
}

// releaseStale unlocks stale lock files, removing them if the leases of
// their jobs were expired (committed).
func releaseStale(locks []staleLock, remove bool) {
	for _, l := range locks {
		if remove {
			removeLocked(l.f) // the lock file of a dead Store: nothing to report
		} else {
			l.f.Close()
		}
	}
}

// workersOf lists the worker IDs of stale lock files.
func workersOf(stale []staleLock) []string {
	ws := make([]string, len(stale))
	for i, l := range stale {
		ws[i] = l.worker
	}
	return ws
}

// sqlExpireWorker expires the leases of the jobs a Store has running;
// sqlResignWorker ends the leader leases it holds.
const (
	sqlExpireWorker = `UPDATE jobs SET lease_until = 0 WHERE state = 'running' AND claimed_by = ?`
	sqlResignWorker = `UPDATE leaders SET until = 0 WHERE holder = ? AND until != 0`
)

// expireWorkers ends the leases of the (dead) Stores of workers: those of
// the running jobs they claimed (lease_until 0), so that Rescue returns
// them at once, and their leader leases (store.Leader, held under the
// Store's worker ID by default), so that the next Lead takes over at once
// rather than after the dead holder's TTL — and, as leader, rescues them.
func expireWorkers(w *writer, workers []string) error {
	for _, wk := range workers {
		if _, err := w.exec(sqlExpireWorker, wk); err != nil {
			return err
		}
		if _, err := w.exec(sqlResignWorker, wk); err != nil {
			return err
		}
	}
	return nil
}
