package crontab_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/crontab"
	"github.com/hopperq/hopper/internal/pgtest"
	"github.com/hopperq/hopper/job"
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

// onEveryStore runs test on a client of a fresh store of each of stores,
// in parallel.
func onEveryStore(t *testing.T, test func(*testing.T, *hopper.Client)) {
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			test(t, st.open(t))
		})
	}
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
	changes, err := importWith(t, c, src, crontab.Options{Prefix: o.Prefix}, o)
	if err != nil {
		t.Fatal(err)
	}
	return changes
}

// importWith parses src with po, which must map every line, and imports
// it into c with o.
func importWith(t *testing.T, c *hopper.Client, src string, po crontab.Options, o crontab.ImportOptions) ([]crontab.Change, error) {
	t.Helper()
	tab, err := crontab.Parse(strings.NewReader(src), po)
	if err != nil {
		t.Fatal(err)
	}
	if len(tab.Problems) > 0 {
		t.Fatalf("problems: %v", tab.Problems)
	}
	return crontab.Import(context.Background(), c, tab, o)
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
	onEveryStore(t, testImportIdempotent)
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

// importMail parses src with mail set up and imports it into c with o.
func importMail(t *testing.T, c *hopper.Client, src string, o crontab.ImportOptions) ([]crontab.Change, error) {
	t.Helper()
	return importWith(t, c, src, crontab.Options{Mail: true}, o)
}

// TestImportMail checks that a MAILTO line becomes an email channel that
// the schedules after it notify, one channel per addresses and sender;
// that a dry run makes none; that importing again changes nothing and a
// new SMTP server updates the channels only; that Mail.Channel routes to
// an existing channel instead; and that a channel of another type in the
// way is refused before anything changes.
func TestImportMail(t *testing.T) {
	t.Parallel()
	onEveryStore(t, testImportMail)
}

func testImportMail(t *testing.T, c *hopper.Client) {
	ctx := context.Background()
	src := `@daily /bin/quiet
MAILTO=ops@example.com
@daily /bin/a
@hourly /bin/b
MAILTO=ops@example.com,dev@example.com
MAILFROM=cron@example.com
@weekly /bin/c
MAILTO=ops@example.com
@monthly /bin/d
MAILTO=""
@daily /bin/e
`
	mail := &crontab.Mail{SMTPAddr: "smtp.example.com:25", From: "hopper@example.com"}
	tmpl := hopper.ScheduleOptions{Monitor: &hopper.Monitor{StartGrace: time.Minute}}
	o := crontab.ImportOptions{Template: tmpl, Mail: mail, DryRun: true}
	want := []string{"mailto-ops-example-com:create", "mailto-ops-example-com-dev-example-com:create", "mailto-ops-example-com-2:create",
		"cron-quiet:create", "cron-a:create", "cron-b:create", "cron-c:create", "cron-d:create", "cron-e:create"}
	changes, err := importMail(t, c, src, o)
	if err != nil {
		t.Fatal(err)
	}
	if got := actions(changes); !reflect.DeepEqual(got, want) {
		t.Fatalf("dry run: %v, want %v", got, want)
	}
	if chs, _ := c.Channels(ctx); len(chs) != 0 {
		t.Fatalf("a dry run made %d channels", len(chs))
	}
	o.DryRun = false
	if _, err := importMail(t, c, src, o); err != nil {
		t.Fatal(err)
	}
	ops, err := c.Channel(ctx, "mailto-ops-example-com")
	if err != nil {
		t.Fatal(err)
	}
	if ops.Type != job.ChannelEmail || ops.SMTPAddr != "smtp.example.com:25" || ops.From != "hopper@example.com" ||
		!reflect.DeepEqual(ops.To, []string{"ops@example.com"}) || ops.All || len(ops.Events) != 0 {
		t.Errorf("channel %+v", ops)
	}
	both, err := c.Channel(ctx, "mailto-ops-example-com-dev-example-com")
	if err != nil {
		t.Fatal(err)
	}
	if both.From != "cron@example.com" || !reflect.DeepEqual(both.To, []string{"ops@example.com", "dev@example.com"}) {
		t.Errorf("channel %+v", both)
	}
	for name, ch := range map[string]string{"cron-quiet": "", "cron-a": ops.Name, "cron-b": ops.Name, "cron-c": both.Name,
		// d: ops again, but after MAILFROM: another sender, another channel
		"cron-d": "mailto-ops-example-com-2", "cron-e": ""} {
		sc, err := c.GetSchedule(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		if sc.Monitor != nil {
			got = sc.Monitor.Channels
		}
		if wantCh := []string{ch}; ch == "" && len(got) != 0 || ch != "" && !reflect.DeepEqual(got, wantCh) {
			t.Errorf("%s notifies %q, want %q", name, got, ch)
		}
		if sc.Monitor == nil || sc.Monitor.StartGrace != time.Minute {
			t.Errorf("%s: monitor %+v, want the template's start grace", name, sc.Monitor)
		}
	}
	if d, _ := c.Channel(ctx, "mailto-ops-example-com-2"); d == nil || d.From != "cron@example.com" {
		t.Errorf("channel of d: %+v", d)
	}

	// Again: nothing changes. A new server updates the channels only.
	changes, err = importMail(t, c, src, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, ch := range changes {
		if ch.Action != crontab.Unchanged {
			t.Errorf("import again: %s %s", ch.Name, ch.Action)
		}
	}
	o.Mail = &crontab.Mail{SMTPAddr: "mail.example.com:587", From: "hopper@example.com"}
	changes, err = importMail(t, c, src, o)
	if err != nil {
		t.Fatal(err)
	}
	want = []string{"mailto-ops-example-com:update", "mailto-ops-example-com-dev-example-com:update", "mailto-ops-example-com-2:update",
		"cron-quiet:unchanged", "cron-a:unchanged", "cron-b:unchanged", "cron-c:unchanged", "cron-d:unchanged", "cron-e:unchanged"}
	if got := actions(changes); !reflect.DeepEqual(got, want) {
		t.Fatalf("new server: %v, want %v", got, want)
	}
	if ch, _ := c.Channel(ctx, ops.Name); ch.SMTPAddr != "mail.example.com:587" {
		t.Errorf("channel after the update %+v", ch)
	}

	// A changed monitor in the template updates the schedules.
	o.Template.Monitor = &hopper.Monitor{StartGrace: time.Minute, AlertAfterFailures: 3}
	changes, err = importMail(t, c, src, o)
	if err != nil {
		t.Fatal(err)
	}
	if ch := changes[len(changes)-1]; ch.Name != "cron-e" || ch.Action != crontab.Update {
		t.Errorf("new monitor: %s %s, want cron-e update", ch.Name, ch.Action)
	}

	// Mail.Channel: every MAILTO goes to it; it must exist.
	o.Mail = &crontab.Mail{Channel: "pager"}
	if _, err := importMail(t, c, src, o); !errors.Is(err, hopper.ErrNotFound) {
		t.Fatalf("a missing mail channel: %v, want ErrNotFound", err)
	}
	if err := c.SetChannel(ctx, hopper.Channel{Name: "pager", Type: job.ChannelCommand, Command: []string{"/bin/page"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := importMail(t, c, src, o); err != nil {
		t.Fatal(err)
	}
	if sc, _ := c.GetSchedule(ctx, "cron-c"); !reflect.DeepEqual(sc.Monitor.Channels, []string{"pager"}) {
		t.Errorf("cron-c notifies %q, want pager", sc.Monitor.Channels)
	}

	// A channel of another type with the name of a MAILTO's is not
	// overwritten, and nothing changes.
	if err := c.SetChannel(ctx, hopper.Channel{Name: "mailto-x-example-com", Type: job.ChannelSlack, URL: "https://hooks.slack.com/x"}); err != nil {
		t.Fatal(err)
	}
	o.Mail = mail
	_, err = importMail(t, c, "MAILTO=x@example.com\n@daily /bin/new\n", o)
	if err == nil || !strings.Contains(err.Error(), "is a slack channel") {
		t.Fatalf("a slack channel in the way: %v", err)
	}
	if _, err := c.GetSchedule(ctx, "cron-new"); !errors.Is(err, hopper.ErrNotFound) {
		t.Errorf("cron-new made after a refused channel: %v", err)
	}
}

// TestImportMailDeadJobNotified: the failed run of a schedule after a
// MAILTO line, whose job dies (max attempts 1, as cron's), is notified to
// the MAILTO's email channel, and a schedule without MAILTO's is not.
func TestImportMailDeadJobNotified(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		ws := hopper.NewWorkers()
		var mu sync.Mutex
		var got []hopper.NotifyArgs
		hopper.Register(ws, hopper.NotifyKind, func(ctx context.Context, a hopper.NotifyArgs) (any, error) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, a)
			return nil, nil
		}, nil)
		hopper.RegisterRaw(ws, kinds.KindExec, func(ctx context.Context, _ json.RawMessage) (any, error) {
			return nil, errors.New("exit status 1")
		}, nil)
		c, err := hopper.NewClient(hopper.Config{Store: memstore.New(), Workers: ws, NotifyDeadJobs: true, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.StopNow() })
		once := 1
		if _, err := importMail(t, c, "@daily /bin/quiet\nMAILTO=ops@example.com\n@daily /bin/loud\n", crontab.ImportOptions{
			Template: hopper.ScheduleOptions{Options: &hopper.EnqueueOptions{MaxAttempts: once}},
			Mail:     &crontab.Mail{SMTPAddr: "smtp.example.com:25", From: "cron@example.com"}}); err != nil {
			t.Fatal(err)
		}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"cron-quiet", "cron-loud"} {
			if _, err := c.RunSchedule(ctx, name, hopper.RunScheduleOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(10 * time.Second)
		if err := c.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(got) != 1 || got[0].Channel != "mailto-ops-example-com" || got[0].Notification.Event != "job_dead" ||
			got[0].Notification.Schedule != "cron-loud" {
			t.Fatalf("notifications %+v, want cron-loud's job_dead to mailto-ops-example-com", got)
		}
	})
}
