package cli

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// readOnlyCommands are the commands that only read: they open the store
// read-only and must never write.
var readOnlyCommands = [][]string{
	{"jobs", "list"}, {"jobs", "list", "--json"}, {"jobs", "count"}, {"jobs", "get", "1"},
	{"dlq", "list"}, {"schedule", "list"}, {"schedule", "list", "--json"}, {"stats"}, {"stats", "--json"},
}

// dirState is what a directory holds: names, sizes, modes, times and
// contents, to tell that nothing was written.
func dirState(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(dir, func(path string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		s := fi.Mode().String() + " " + fi.ModTime().Format(time.RFC3339Nano)
		if !fi.IsDir() {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			s += " " + string(b)
		}
		out[rel] = s
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func names(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func sameDir(t *testing.T, what string, before, after map[string]string) {
	t.Helper()
	if !slices.Equal(names(before), names(after)) {
		t.Errorf("%s: files before %v, after %v", what, names(before), names(after))
		return
	}
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s: %s changed", what, k)
		}
	}
}

// TestReadOnlyEmptyFile: on an empty (0-byte) file, the read-only commands
// report no jobs and write nothing: the file stays empty, and no
// <db>-workers/, -wal or -shm appears.
func TestReadOnlyEmptyFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(db, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	before := dirState(t, dir)
	for _, args := range readOnlyCommands {
		r := hop(t, db, args...)
		if slices.Equal(args, []string{"jobs", "get", "1"}) {
			r.fails(t, 1, "job 1 not found")
		} else {
			r.ok(t)
		}
	}
	hop(t, db, "jobs", "list").ok(t)
	if r := hop(t, db, "jobs", "list"); r.out != "" || r.err != "no jobs\n" {
		t.Errorf("jobs list on an empty file: stdout %q, stderr %q", r.out, r.err)
	}
	if r := hop(t, db, "jobs", "count").ok(t); r.out != "0\n" {
		t.Errorf("jobs count on an empty file: %q", r.out)
	}
	var st statsJSON
	hop(t, db, "stats", "--json").ok(t).decode(&st)
	if st.Total != 0 {
		t.Errorf("stats on an empty file: %+v", st)
	}
	sameDir(t, "read-only commands on an empty file", before, dirState(t, dir))
}

// TestReadOnlyDatabase: on a database with jobs and a schedule, the
// read-only commands leave every byte of the directory as it was.
func TestReadOnlyDatabase(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "hopper.db")
	id := hop(t, db, "enqueue", "--max-attempts", "1", "exec", "--", "sh", "-c", "exit 3").ok(t).id(t)
	hop(t, db, "enqueue", "--delay", "1h", "exec", "--", "true").ok(t)
	hop(t, db, "schedule", "add", "s", "--every", "1h", "exec", "--", "true").ok(t)
	work(t, db, id)
	before := dirState(t, dir)
	for _, name := range names(before) {
		if filepath.Ext(name) == ".db-wal" || filepath.Ext(name) == ".db-shm" {
			t.Logf("%s exists before the read-only commands", name)
		}
	}
	for _, args := range readOnlyCommands {
		hop(t, db, args...).ok(t)
	}
	hop(t, db, "dlq", "list").ok(t).has(t, "exit code 3")
	sameDir(t, "read-only commands", before, dirState(t, dir))
}

// TestReadOnlyPermissions: the read-only commands work on a read-only file
// in a read-only directory. Root is not bound by permission bits, so as
// root (as in CI) this shows only that nothing fails; TestReadOnlyDatabase
// and TestReadOnlyEmptyFile show that the store's read-only mode writes
// nothing, which is what makes this work for other users.
func TestReadOnlyPermissions(t *testing.T) {
	t.Parallel()
	if os.Geteuid() == 0 {
		t.Log("running as root: permission bits do not bind; the read-only mode is checked by TestReadOnlyDatabase")
	}
	dir := filepath.Join(t.TempDir(), "ro")
	os.Mkdir(dir, 0o755)
	db := filepath.Join(dir, "hopper.db")
	hop(t, db, "enqueue", "exec", "--", "true").ok(t)
	os.RemoveAll(db + "-workers")
	if err := os.Chmod(db, 0o444); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o755) })
	before := dirState(t, dir)
	for _, args := range readOnlyCommands {
		hop(t, db, args...).ok(t)
	}
	hop(t, db, "jobs", "list").ok(t).has(t, "available")
	sameDir(t, "read-only commands in a read-only directory", before, dirState(t, dir))
	// A missing file keeps its clear error.
	hop(t, filepath.Join(dir, "missing.db"), "jobs", "list").fails(t, 1, "no database at "+filepath.Join(dir, "missing.db"))
}

func TestReadOnlyMissingFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "missing.db")
	for _, args := range readOnlyCommands {
		hop(t, db, args...).fails(t, 1, "no database at "+db)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("%d files created", len(entries))
	}
}
