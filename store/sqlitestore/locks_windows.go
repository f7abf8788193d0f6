package sqlitestore

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// lockOffset is the byte of a lock file that is locked: Windows' locks are
// mandatory, so the lock is far past the text the file holds ("pid N host
// H"), which a person can still read.
const lockOffset = 1 << 62

// tryLock takes an exclusive LockFileEx lock on f without waiting. It
// reports false and no error when another handle holds it, in this
// process or another. Windows drops the lock when the handle is closed or
// its process ends, however it ends.
func tryLock(f *os.File) (bool, error) {
	ol := &windows.Overlapped{Offset: uint32(lockOffset & 0xffffffff), OffsetHigh: uint32(lockOffset >> 32)}
	err := windows.LockFileEx(windows.Handle(f.Fd()),
		windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, ol)
	if errors.Is(err, windows.ERROR_LOCK_VIOLATION) {
		return false, nil
	}
	return err == nil, err
}

// removeLocked removes the lock file f, which we hold locked (our own, or
// a dead Store's), and closes it. Windows cannot remove a file that is
// open, so it closes first: a Store (or a scan) that opens the file
// meanwhile keeps it open, and the removal fails, leaving the file in
// place; a later scan finds it unlocked and removes it.
func removeLocked(f *os.File) error {
	err := f.Close()
	os.Remove(f.Name())
	return err
}
