//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package sqlitestore

import (
	"errors"
	"os"
	"syscall"
)

// tryLock takes an exclusive flock on f without waiting. It reports false
// and no error when another open file holds one, in this process or
// another.
func tryLock(f *os.File) (bool, error) {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return false, nil
	}
	return err == nil, err
}

// removeLocked removes the lock file f, which we hold locked (our own, or
// a dead Store's), and closes it. It removes before unlocking, so that a
// Store opening the file meanwhile finds, once it holds the lock, that the
// file is no longer at its path (stillAt) and starts over with a new one.
func removeLocked(f *os.File) error {
	os.Remove(f.Name())
	return f.Close()
}
