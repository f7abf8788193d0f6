package sqlitestore_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/sqlitestore"
)

// TestLockedFile: while another connection (here: another program's
// exclusive transaction) holds the file's write lock past the busy timeout,
// writes fail with ErrLocked naming the file and change nothing; once the
// lock is released the store works again and nothing stored was lost.
func TestLockedFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "hopper.db")
	s := open(t, path, sqlitestore.Options{BusyTimeout: 50 * time.Millisecond})
	kept := enqueue(t, s, newJob(t, "before"))

	other, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	conn, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN EXCLUSIVE"); err != nil {
		t.Fatal(err)
	}
	_, err = s.Enqueue(ctx, store.EnqueueParams{Now: t0, Jobs: []*job.Job{newJob(t, "during")}})
	if !errors.Is(err, sqlitestore.ErrLocked) || !strings.Contains(err.Error(), path) {
		t.Fatalf("Enqueue while locked: got %v, want ErrLocked naming %s", err, path)
	}
	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	after := enqueue(t, s, newJob(t, "after"))
	jobs, err := s.List(ctx, store.ListParams{})
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, j := range jobs {
		kinds = append(kinds, j.Kind)
	}
	if strings.Join(kinds, ",") != "before,after" || jobs[0].ID != kept[0] || jobs[1].ID != after[0] {
		t.Errorf("after the lock: jobs %v, want before and after only", kinds)
	}
}

// TestUnreadablePath: a path that is not a readable file (a directory here;
// permissions cannot be tested as root) gives a clear error naming it.
func TestUnreadablePath(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, err := sqlitestore.Open(context.Background(), dir, sqlitestore.Options{})
	if err == nil || !strings.Contains(err.Error(), dir) {
		t.Fatalf("Open(directory): got %v, want an error naming %s", err, dir)
	}
}
