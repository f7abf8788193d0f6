//go:build unix

package sqlitestore_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hopperq/hopper/store/sqlitestore"
)

// TestNewFilePrivate: a database file Open creates, and its -wal and -shm,
// may be read by their owner only (SQLite made them 0644 less the umask:
// every local user could read the jobs' args and results); an existing
// file keeps the mode it has.
func TestNewFilePrivate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "new.db")
	s := open(t, path, sqlitestore.Options{})
	enqueue(t, s, newJob(t, "k"))
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if m := fi.Mode().Perm(); m&0o077 != 0 {
			t.Errorf("%s: mode %v, want no access for group and others", filepath.Base(p), m)
		}
	}

	shared := filepath.Join(dir, "shared.db")
	if err := os.WriteFile(shared, nil, 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o640); err != nil { // whatever the umask
		t.Fatal(err)
	}
	s = open(t, shared, sqlitestore.Options{})
	enqueue(t, s, newJob(t, "k"))
	if fi, err := os.Stat(shared); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("an existing 0640 file: %v, %v; want its mode kept", fi.Mode(), err)
	}
}
