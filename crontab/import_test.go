package crontab_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/crontab"
	"github.com/hopperq/hopper/internal/pgtest"
	"github.com/hopperq/hopper/kinds"
	"github.com/hopperq/hopper/store/memstore"
	_ "github.com/hopperq/hopper/store/pgstore"     // postgres:
	_ "github.com/hopperq/hopper/store/sqlitestore" // sqlite:
)

// newClient returns a client on a fresh memory store with the built-in
// kinds, not started: tests run jobs with ProcessNext.
func newClient(t *testing.T) *hopper.Client {
	t.Helper()
	ws := hopper.NewWorkers()
	kinds.Register(ws)
	c, err := hopper.NewClient(hopper.Config{Store: memstore.New(), Workers: ws, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.StopNow() })
	return c
}

// stores are the stores Import is tested on: each returns a client on a
// fresh store (PostgreSQL skips without a test server).
var stores = []struct {
	name string
	open func(t *testing.T) *hopper.Client
}{
	{"memory", newClient},
	{"sqlite", func(t *testing.T) *hopper.Client { return openClient(t, "sqlite:"+filepath.Join(t.TempDir(), "h.db")) }},
	{"postgres", func(t *testing.T) *hopper.Client { return openClient(t, pgtest.StoreURL(t, 4)) }},
}

// openClient returns a client on the store at url, with the built-in
// kinds, not started.
func openClient(t *testing.T, url string) *hopper.Client {
	t.Helper()
	ws := hopper.NewWorkers()
	kinds.Register(ws)
	c, err := hopper.Open(context.Background(), url, hopper.Config{Workers: ws, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.StopNow() })
	return c
}

// importSrc parses src and imports it into c with o.
func importSrc(t *testing.T, c *hopper.Client, src string, o crontab.ImportOptions) []crontab.Change {
	t.Helper()
	tab, err := crontab.Parse(strings.NewReader(src), crontab.Options{Prefix: o.Prefix})
	if err != nil {
		t.Fatal(err)
	}
	if len(tab.Problems) > 0 {
		t.Fatalf("problems: %v", tab.Problems)
	}
	changes, err := crontab.Import(context.Background(), c, tab, o)
	if err != nil {
		t.Fatal(err)
	}
	return changes
}

// actions returns "name:action" for each change.
func actions(changes []crontab.Change) []string {
	var out []string
	for _, ch := range changes {
		out = append(out, ch.Name+":"+string(ch.Action))
	}
	return out
}

// TestImportIdempotent checks create, unchanged, update (keeping a pause),
// prune, and that a dry run changes nothing.
func TestImportIdempotent(t *testing.T) {
	t.Parallel()
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			testImportIdempotent(t, st.open(t))
		})
	}
}

func testImportIdempotent(t *testing.T, c *hopper.Client) {
	ctx := context.Background()
	src := "@daily /opt/backup.sh\nCRON_TZ=Europe/Berlin\n30 2 * * 1-5 report --week\n"
	want := []string{"cron-backup-sh:create", "cron-report-week:create"}
	if got := actions(importSrc(t, c, src, crontab.ImportOptions{DryRun: true})); !reflect.DeepEqual(got, want) {
		t.Fatalf("dry run: %v, want %v", got, want)
	}
	if scheds, _ := c.Schedules(ctx); len(scheds) != 0 {
		t.Fatalf("a dry run added %d schedules", len(scheds))
	}
	if got := actions(importSrc(t, c, src, crontab.ImportOptions{})); !reflect.DeepEqual(got, want) {
		t.Fatalf("import: %v, want %v", got, want)
	}
	sc, err := c.GetSchedule(ctx, "cron-report-week")
	if err != nil {
		t.Fatal(err)
	}
	if sc.Spec != "30 2 * * 1-5" || sc.TimeZone != "Europe/Berlin" || sc.Kind != kinds.KindExec || !reflect.DeepEqual(sc.Tags, []string{crontab.Tag}) {
		t.Fatalf("schedule %+v", sc)
	}
	// Again: nothing changes, not even the creation time.
	want = []string{"cron-backup-sh:unchanged", "cron-report-week:unchanged"}
	if got := actions(importSrc(t, c, src, crontab.ImportOptions{})); !reflect.DeepEqual(got, want) {
		t.Fatalf("import again: %v, want %v", got, want)
	}
	if again, _ := c.GetSchedule(ctx, "cron-report-week"); !again.CreatedAt.Equal(sc.CreatedAt) {
		t.Errorf("an unchanged schedule was rewritten: created %v, then %v", sc.CreatedAt, again.CreatedAt)
	}
	// A changed time and new policies update; a pause is kept; a line
	// removed is pruned only with Prune.
	if err := c.PauseSchedule(ctx, "cron-report-week"); err != nil {
		t.Fatal(err)
	}
	src2 := "CRON_TZ=Europe/Berlin\n45 2 * * 1-5 report --week\n"
	tmpl := hopper.ScheduleOptions{Overlap: hopper.OverlapAllow, CatchUp: hopper.CatchUpNone}
	want = []string{"cron-report-week:update"}
	if got := actions(importSrc(t, c, src2, crontab.ImportOptions{Template: tmpl})); !reflect.DeepEqual(got, want) {
		t.Fatalf("update: %v, want %v", got, want)
	}
	sc, _ = c.GetSchedule(ctx, "cron-report-week")
	if sc.Spec != "45 2 * * 1-5" || !sc.Paused || sc.Overlap != hopper.OverlapAllow || sc.CatchUp != hopper.CatchUpNone {
		t.Fatalf("updated schedule %+v", sc)
	}
	if _, err := c.AddSchedule(ctx, "cron-mine", hopper.ScheduleOptions{Cron: "@daily", Kind: kinds.KindExec, Args: kinds.ExecArgs{Command: "true"}}); err != nil {
		t.Fatal(err)
	}
	want = []string{"cron-report-week:unchanged", "cron-backup-sh:remove"} // not cron-mine: no crontab tag
	for _, dry := range []bool{true, false} {
		got := actions(importSrc(t, c, src2, crontab.ImportOptions{Template: tmpl, Prune: true, DryRun: dry}))
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("prune (dry run %v): %v, want %v", dry, got, want)
		}
		_, err := c.GetSchedule(ctx, "cron-backup-sh")
		if removed := err != nil; removed == dry {
			t.Fatalf("dry run %v: cron-backup-sh removed %v", dry, removed)
		}
	}
}

// TestImportedJobRuns runs the job of an imported line: the shell of
// SHELL, the environment lines, and the text after % as stdin.
func TestImportedJobRuns(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Skip("exec jobs run on Unix")
	}
	ctx := context.Background()
	c := newClient(t)
	importSrc(t, c, "SHELL=/bin/sh\nGREETING = \"hello there\"\n@daily echo \"$GREETING\"; tr a-z A-Z; echo \\% done%line one%line two\n", crontab.ImportOptions{})
	j, err := c.RunSchedule(ctx, "cron-echo-greeting", hopper.RunScheduleOptions{})
	if err != nil {
		t.Fatal(err)
	}
	done, ok, err := c.ProcessNext(ctx, time.Now())
	if err != nil || !ok || done.ID != j.ID || done.State != hopper.StateCompleted {
		t.Fatalf("ProcessNext: %+v %v %v", done, ok, err)
	}
	var res kinds.ExecResult
	if err := json.Unmarshal(done.Result, &res); err != nil {
		t.Fatal(err)
	}
	if want := "hello there\nLINE ONE\nLINE TWO% done\n"; res.StdoutTail != want {
		t.Errorf("stdout %q, want %q", res.StdoutTail, want)
	}
}
