package sqlitestore

import (
	"bufio"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hopperq/hopper/internal/proctest"
	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// snapshot describes every file under dir: name, mode, size, modification
// time and a hash of its bytes.
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		fmt.Fprintf(&b, "%s %v %d %d", rel, fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		if fi.Mode().IsRegular() {
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, " %x", sha256.Sum256(data))
		}
		b.WriteByte('\n')
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// unchangedDir fails unless dir is as snapshot before says.
func unchangedDir(t *testing.T, what, dir, before string) {
	t.Helper()
	if after := snapshot(t, dir); after != before {
		t.Errorf("%s changed the directory:\nbefore:\n%safter:\n%s", what, before, after)
	}
}

// openRO opens path read-only.
func openRO(t *testing.T, path string) *Store {
	t.Helper()
	s, err := Open(t.Context(), path, Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("read-only Open(%s): %v", path, err)
	}
	return s
}

// writeAll calls every write method of s and fails unless each fails with
// ErrReadOnly.
func writeAll(t *testing.T, s *Store, id job.ID) {
	t.Helper()
	ctx := t.Context()
	j := &job.Job{Kind: "k", Queue: "q", MaxAttempts: 1}
	if err := j.Validate(t0); err != nil {
		t.Fatal(err)
	}
	calls := map[string]func() error{
		"Enqueue": func() error { _, err := s.Enqueue(ctx, store.EnqueueParams{Now: t0, Jobs: []*job.Job{j}}); return err },
		"Claim": func() error {
			_, err := s.Claim(ctx, store.ClaimParams{Now: t0, Limit: 1, Worker: "w", LeaseUntil: t0.Add(time.Minute)})
			return err
		},
		"Finish": func() error {
			_, err := s.Finish(ctx, store.FinishParams{Now: t0, Outcomes: []store.Outcome{{ID: id, Attempt: 1, Claim: 1, State: job.StateCompleted}}})
			return err
		},
		"Heartbeat": func() error {
			_, err := s.Heartbeat(ctx, store.HeartbeatParams{Now: t0, Worker: "w", Jobs: []store.Lease{{ID: id, Claim: 1}}})
			return err
		},
		"Rescue": func() error { _, err := s.Rescue(ctx, store.RescueParams{Now: t0}); return err },
		"Cancel": func() error { _, err := s.Cancel(ctx, store.CancelParams{Now: t0, ID: id}); return err },
		"Reschedule": func() error {
			_, err := s.Reschedule(ctx, store.RescheduleParams{Now: t0, ID: id, RunAt: t0})
			return err
		},
		"RetryDead": func() error { _, err := s.RetryDead(ctx, store.RetryDeadParams{Now: t0, All: true}); return err },
		"Purge": func() error {
			_, err := s.Purge(ctx, store.PurgeParams{States: []job.State{job.StateCompleted}, All: true})
			return err
		},
		"AddSchedule": func() error {
			return s.AddSchedule(ctx, store.AddScheduleParams{Schedule: &job.Schedule{Name: "n", Spec: "@daily", Kind: "k"}})
		},
		"UpdateSchedule": func() error { _, err := s.UpdateSchedule(ctx, store.UpdateScheduleParams{Name: "s"}); return err },
		"RemoveSchedule": func() error { return s.RemoveSchedule(ctx, "s") },
		"FireSchedule": func() error {
			_, err := s.FireSchedule(ctx, store.FireScheduleParams{Now: t0, Name: "s", FireTime: t0, Job: j})
			return err
		},
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, ErrReadOnly) || !strings.Contains(err.Error(), "ReadOnly") {
			t.Errorf("%s on a read-only store: got %v, want ErrReadOnly", name, err)
		}
	}
}

// wantEmpty fails unless every read of s finds nothing.
func wantEmpty(t *testing.T, s *Store) {
	t.Helper()
	ctx := t.Context()
	if _, err := s.Get(ctx, 1); !errors.Is(err, job.ErrNotFound) {
		t.Errorf("Get: %v, want job.ErrNotFound", err)
	}
	if js, err := s.List(ctx, store.ListParams{}); err != nil || len(js) != 0 {
		t.Errorf("List: %d jobs, %v", len(js), err)
	}
	if n, err := s.Count(ctx, store.ListParams{Kind: "k"}); err != nil || n != 0 {
		t.Errorf("Count: %d, %v", n, err)
	}
	if st, err := s.Stats(ctx, store.StatsParams{Now: t0, FinishedSince: t0}); err != nil || len(st.ByQueue) != 0 || len(st.Finished) != 0 {
		t.Errorf("Stats: %+v, %v", st, err)
	}
	if _, err := s.GetSchedule(ctx, "s"); !errors.Is(err, job.ErrNotFound) {
		t.Errorf("GetSchedule: %v, want job.ErrNotFound", err)
	}
	if scs, err := s.ListSchedules(ctx); err != nil || len(scs) != 0 {
		t.Errorf("ListSchedules: %v, %v", scs, err)
	}
}

// TestReadOnlyNoDatabase: a file that does not exist, is empty, or is a
// database without tables reads as an empty store, and nothing is created
// or changed.
func TestReadOnlyNoDatabase(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "empty.db"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, filepath.Join(dir, "notables.db"))
	if _, err := db.Exec("CREATE TABLE x (a); DROP TABLE x"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	before := snapshot(t, dir)
	for _, name := range []string{"missing.db", "empty.db", "notables.db", "missing-dir/x.db"} {
		t.Run(name, func(t *testing.T) {
			s := openRO(t, filepath.Join(dir, name))
			wantEmpty(t, s)
			writeAll(t, s, 1)
			if err := s.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			if _, err := s.Get(t.Context(), 1); !errors.Is(err, job.ErrClosed) {
				t.Errorf("Get after Close: %v, want job.ErrClosed", err)
			}
			unchangedDir(t, "read-only Open of "+name, dir, before)
		})
	}
}

// fill writes a database at path with a few jobs and a schedule and
// closes it; it returns the IDs.
func fill(t *testing.T, path string) []job.ID {
	t.Helper()
	s, err := Open(t.Context(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var ids []job.ID
	for i, kind := range []string{"a", "b", "c"} {
		j := testJob(t, kind)
		j.Queue = []string{"q1", "q2", "q1"}[i]
		ids = append(ids, enqueueOne(t, s, j))
	}
	if err := s.AddSchedule(t.Context(), store.AddScheduleParams{Schedule: &job.Schedule{Name: "s", Spec: "@daily", Kind: "k"}}); err != nil {
		t.Fatal(err)
	}
	return ids
}

func enqueueOne(t *testing.T, s *Store, j *job.Job) job.ID {
	t.Helper()
	res, err := s.Enqueue(t.Context(), store.EnqueueParams{Now: t0, Jobs: []*job.Job{j}})
	if err != nil {
		t.Fatal(err)
	}
	return res[0].ID
}

// wantJobs fails unless s holds exactly the jobs ids (in order), readable.
func wantJobs(t *testing.T, s *Store, ids []job.ID) {
	t.Helper()
	js, err := s.List(t.Context(), store.ListParams{})
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if fmt.Sprint(idsOf(js)) != fmt.Sprint(ids) {
		t.Errorf("List: IDs %v, want %v", idsOf(js), ids)
	}
	if n, err := s.Count(t.Context(), store.ListParams{Queue: "q1"}); err != nil || n != 2 {
		t.Errorf("Count of q1: %d, %v; want 2", n, err)
	}
	if _, err := s.GetSchedule(t.Context(), "s"); err != nil {
		t.Errorf("GetSchedule: %v", err)
	}
}

// TestReadOnlyUnwritableFile: a closed database in a directory that may
// not be written (file 0444, directory 0555) opens read-only, reads, and
// is left byte for byte as it was, with no file added. As root the modes
// do not stop writes, so the same is also checked in a child process
// running as nobody, where they do.
func TestReadOnlyUnwritableFile(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "hopper.db")
	ids := fill(t, path)
	if err := os.Chmod(path, 0o444); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o755) })
	before := snapshot(t, dir)

	s := openRO(t, path)
	wantJobs(t, s, ids)
	writeAll(t, s, ids[0])
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	unchangedDir(t, "read-only Open", dir, before)

	if os.Geteuid() == 0 {
		out := runAsNobody(t, path)
		if want := fmt.Sprintf("ok %d jobs", len(ids)); out != want {
			t.Errorf("read-only Open as nobody: %q, want %q", out, want)
		}
		unchangedDir(t, "read-only Open as nobody", dir, before)
		// -wal and -shm files nobody may open (left by a Store of another
		// user that died): mode=ro fails, the fallback reads the file
		// immutable.
		for _, ext := range []string{"-wal", "-shm"} {
			if err := os.WriteFile(path+ext, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		before = snapshot(t, dir)
		if out, want := runAsNobody(t, path), fmt.Sprintf("ok %d jobs", len(ids)); out != want {
			t.Errorf("read-only Open as nobody with unusable -wal and -shm: %q, want %q", out, want)
		}
		unchangedDir(t, "read-only Open as nobody with unusable -wal and -shm", dir, before)
	}
}

const roHelperEnv = "HOPPER_SQLITESTORE_RO_HELPER_DB"

// TestReadOnlyHelperProcess is not a test: TestReadOnlyUnwritableFile runs
// the test binary again, as an unprivileged user, to open a database
// read-only; it prints "ok <n> jobs" or the error.
func TestReadOnlyHelperProcess(t *testing.T) {
	path := os.Getenv(roHelperEnv)
	if path == "" {
		t.Skip("helper process of TestReadOnlyUnwritableFile")
	}
	s, err := Open(context.Background(), path, Options{ReadOnly: true})
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(0)
	}
	js, err := s.List(context.Background(), store.ListParams{})
	if err != nil {
		fmt.Println("list:", err)
		os.Exit(0)
	}
	if _, err := s.Enqueue(context.Background(), store.EnqueueParams{Now: t0, Jobs: js[:1]}); !errors.Is(err, ErrReadOnly) {
		fmt.Println("enqueue:", err)
		os.Exit(0)
	}
	s.Close()
	fmt.Printf("ok %d jobs\n", len(js))
	os.Exit(0)
}

// runAsNobody runs TestReadOnlyHelperProcess on path as user nobody, from
// a copy of the test binary it can read, and returns its output line.
func runAsNobody(t *testing.T, path string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "helper.test")
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	proctest.WriteExecutable(t, bin, data)
	// Let nobody reach the binary and the database (test directories are
	// created 0700).
	for _, p := range []string{filepath.Dir(bin), filepath.Dir(filepath.Dir(path))} {
		for ; p != "/" && p != os.TempDir(); p = filepath.Dir(p) {
			if fi, err := os.Stat(p); err == nil && fi.Mode().Perm()&0o005 != 0o005 {
				if err := os.Chmod(p, fi.Mode().Perm()|0o005); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	cmd := exec.Command(bin, "-test.run=^TestReadOnlyHelperProcess$")
	cmd.Env = append(os.Environ(), roHelperEnv+"="+path)
	cmd.SysProcAttr = nobody(t)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot run a process as nobody: %v", err)
	}
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	io.Copy(io.Discard, stdout)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper process: %v (output %q)", err, line)
	}
	return strings.TrimSpace(line)
}

// TestReadOnlyLiveWriter: while a Store has the file open (its -wal and
// -shm exist), a read-only Store reads the latest commits, including those
// made after it opened, and adds no file.
func TestReadOnlyLiveWriter(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "hopper.db")
	// Made readable by others before the first Open, as an operator
	// sharing it would: a new file is its owner's only, and its -wal
	// and -shm take its mode.
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	ids := fill(t, path)
	w := openTest2(t, path)
	ids = append(ids, enqueueOne(t, w, testJob(t, "d")))
	before := snapshot(t, dir)
	s := openRO(t, path)
	defer s.Close()
	ids = append(ids, enqueueOne(t, w, testJob(t, "e")))
	js, err := s.List(t.Context(), store.ListParams{})
	if err != nil || fmt.Sprint(idsOf(js)) != fmt.Sprint(ids) {
		t.Errorf("read-only List while a writer works: %v, %v; want %v", idsOf(js), err, ids)
	}
	writeAll(t, s, ids[0])
	s.Close()
	if os.Geteuid() == 0 { // -wal and -shm are the writer's: nobody can only read them
		if out, want := runAsNobody(t, path), fmt.Sprintf("ok %d jobs", len(ids)); out != want {
			t.Errorf("read-only Open as nobody while a writer works: %q, want %q", out, want)
		}
	}
	// The writer's own commits change the -wal and -shm; compare names.
	names := func(snap string) (out []string) {
		for _, l := range strings.Split(snap, "\n") {
			out = append(out, strings.Fields(l + " x")[0])
		}
		return out
	}
	if a, b := names(snapshot(t, dir)), names(before); fmt.Sprint(a) != fmt.Sprint(b) {
		t.Errorf("files after the read-only Store: %v, before %v", a, b)
	}
}

func openTest2(t *testing.T, path string) *Store {
	t.Helper()
	s, err := Open(t.Context(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestReadOnlyRefusals: a read-only Open refuses, changing nothing, a
// file that is not a Hopper database and one of a newer schema.
func TestReadOnlyRefusals(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.db")
	if err := os.WriteFile(garbage, []byte(strings.Repeat("not a database\n", 500)), 0o644); err != nil {
		t.Fatal(err)
	}
	newer := filepath.Join(dir, "newer.db")
	fill(t, newer)
	db := rawDB(t, newer)
	if _, err := db.Exec(fmt.Sprintf("PRAGMA user_version = %d", schemaVersion()+1)); err != nil {
		t.Fatal(err)
	}
	db.Close()
	before := snapshot(t, dir)
	for path, want := range map[string]error{garbage: ErrNotDatabase, newer: ErrSchemaTooNew, dir: nil} {
		s, err := Open(t.Context(), path, Options{ReadOnly: true})
		if err == nil {
			s.Close()
		}
		if err == nil || (want != nil && !errors.Is(err, want)) || !strings.Contains(err.Error(), path) {
			t.Errorf("read-only Open(%s): %v, want an error naming the file (%v)", path, err, want)
		}
	}
	unchangedDir(t, "refused read-only Opens", dir, before)
}
