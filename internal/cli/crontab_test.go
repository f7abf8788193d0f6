package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/kinds"
)

// schedulesOf returns the schedules stored in the SQLite file db, by name.
func schedulesOf(t *testing.T, db string) map[string]*hopper.Schedule {
	t.Helper()
	ctx := context.Background()
	ws := hopper.NewWorkers()
	kinds.Register(ws)
	c, err := hopper.Open(ctx, "sqlite:"+db, hopper.Config{Workers: ws, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.StopNow()
	scheds, err := c.Schedules(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*hopper.Schedule{}
	for _, sc := range scheds {
		out[sc.Name] = sc
	}
	return out
}

// readFile returns the bytes of the SQLite file path and of its
// write-ahead log, if it has one.
func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	wal, err := os.ReadFile(path + "-wal")
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return append(b, wal...)
}

// TestCrontabImportEveryForm imports a crontab holding every form the
// import maps into a SQLite store and checks each schedule: its cron
// expression, zone, shell, environment, stdin and command; then that a dry
// run and a second import change nothing, and that a job of an imported
// schedule runs with its shell, environment and stdin.
func TestCrontabImportEveryForm(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	const file = "testdata/crontab/every-form.crontab"
	hop(t, db, "migrate").ok(t)

	// A dry run plans every line and changes nothing, not a byte.
	before := readFile(t, db)
	hop(t, db, "crontab", "import", "--dry-run", "--tz", "Europe/Paris", file).ok(t).
		has(t, "would create  cron-sync-quiet", "dry run, nothing changed: would create 14, update 0, remove 0; 0 unchanged; 0 lines not imported")
	if !bytes.Equal(before, readFile(t, db)) {
		t.Fatal("the dry run changed the database file")
	}
	if n := len(schedulesOf(t, db)); n != 0 {
		t.Fatalf("the dry run made %d schedules", n)
	}

	r := hop(t, db, "crontab", "import", "--tz", "Europe/Paris", file).ok(t).has(t, "create 14, update 0, remove 0; 0 unchanged")
	if r.err != "" {
		t.Errorf("stderr: %s", r.err)
	}
	env := []string{"SHELL=/bin/sh", "PATH=/usr/local/bin:/usr/bin:/bin", "GREETING=hello  from cron", "QUOTED=single quoted"}
	with := func(extra ...string) []string { return append(append([]string{}, env...), extra...) }
	type want struct {
		cron, zone, shell, command, stdin string
		env                               []string
	}
	wants := map[string]want{
		"cron-sync-quiet":     {"*/15 * * * *", "Europe/Paris", "/bin/sh", "/opt/app/bin/sync --quiet >/dev/null 2>&1", "", env},
		"cron-report-weekday": {"0 2 * * MON-FRI", "Europe/Paris", "/bin/sh", "/opt/app/bin/report --weekday", "", env},
		"cron-halfmonthly":    {"5 4 1,15 jan-jun *", "Europe/Paris", "/bin/sh", "/opt/app/bin/halfmonthly", "", env},
		"cron-yearly":         {"@yearly", "Europe/Paris", "/bin/sh", "/opt/app/bin/yearly", "", env},
		"cron-annually":       {"@annually", "Europe/Paris", "/bin/sh", "/opt/app/bin/annually", "", env},
		"cron-monthly":        {"@monthly", "Europe/Paris", "/bin/sh", "/opt/app/bin/monthly", "", env},
		"cron-weekly":         {"@weekly", "Europe/Paris", "/bin/sh", "/opt/app/bin/weekly", "", env},
		"cron-daily":          {"@daily", "Europe/Paris", "/bin/sh", "/opt/app/bin/daily", "", env},
		"cron-midnight":       {"@midnight", "Europe/Paris", "/bin/sh", "/opt/app/bin/midnight", "", env},
		"cron-hourly":         {"@hourly", "Europe/Paris", "/bin/sh", "/opt/app/bin/hourly", "", env},
		"cron-printf-s": {"30 2 * * *", "Europe/Berlin", "/bin/sh",
			`printf '%s|' "$GREETING" "$QUOTED"; tr a-z A-Z; date +%Y >/dev/null`, "first line\nsecond line", env},
		"cron-echo-tz":    {"0 9 * * 1", "Europe/Berlin", "/bin/sh", `echo "$TZ"`, "", with("TZ=America/New_York")},
		"cron-echo-tokyo": {"0 0 * * *", "Asia/Tokyo", "/bin/sh", "echo tokyo", "", with("TZ=Asia/Tokyo")},
		"cron-echo-bash-version-bash": {"@daily", "Asia/Tokyo", "/bin/bash", `echo "${BASH_VERSION:+bash}"`, "",
			// SHELL keeps its first place in the environment when set again.
			[]string{"SHELL=/bin/bash", "PATH=/usr/local/bin:/usr/bin:/bin", "GREETING=hello  from cron", "QUOTED=single quoted", "TZ=Asia/Tokyo"}},
	}
	scheds := schedulesOf(t, db)
	if len(scheds) != len(wants) {
		t.Errorf("%d schedules, want %d", len(scheds), len(wants))
	}
	for name, w := range wants {
		sc := scheds[name]
		if sc == nil {
			t.Errorf("no schedule %s", name)
			continue
		}
		var a kinds.ExecArgs
		if err := json.Unmarshal(sc.Args, &a); err != nil {
			t.Fatal(err)
		}
		got := want{sc.Spec, sc.TimeZone, a.Command, "", a.Stdin, a.Env}
		if len(a.Args) == 2 && a.Args[0] == "-c" {
			got.command = a.Args[1]
		}
		if !reflect.DeepEqual(got, w) || sc.Kind != kinds.KindExec || !reflect.DeepEqual(sc.Tags, []string{"crontab"}) || sc.MaxAttempts != 1 {
			t.Errorf("%s:\n got %+v (kind %s, tags %v, max attempts %d)\nwant %+v", name, got, sc.Kind, sc.Tags, sc.MaxAttempts, w)
		}
	}

	// Importing again changes nothing; so does a dry run of it.
	before = readFile(t, db)
	hop(t, db, "crontab", "import", "--dry-run", "--tz", "Europe/Paris", file).ok(t).has(t, "would create 0, update 0, remove 0; 14 unchanged")
	if !bytes.Equal(before, readFile(t, db)) {
		t.Fatal("the dry run changed the database file")
	}
	hop(t, db, "crontab", "import", "--tz", "Europe/Paris", file).ok(t).has(t, "create 0, update 0, remove 0; 14 unchanged")
	if again := schedulesOf(t, db); !reflect.DeepEqual(again, scheds) {
		t.Error("a second import changed the schedules")
	}

	// The job of the Berlin line runs with its environment and stdin.
	id := hop(t, db, "schedule", "run", "cron-printf-s").ok(t).id(t)
	j := work(t, db, id)[0]
	var res kinds.ExecResult
	if err := json.Unmarshal(j.Result, &res); err != nil || j.State != hopper.StateCompleted {
		t.Fatalf("job %+v: %v", j, err)
	}
	if want := "hello  from cron|single quoted|FIRST LINE\nSECOND LINE"; res.StdoutTail != want {
		t.Errorf("stdout %q, want %q", res.StdoutTail, want)
	}
}

// TestCrontabImportUnmappable checks that each line that cannot be mapped
// is reported with its number and reason, that nothing is imported then
// (exit 2), and that --skip-unmappable imports the rest.
func TestCrontabImportUnmappable(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	const file = "testdata/crontab/unmappable.crontab"
	hop(t, db, "migrate").ok(t)
	before := readFile(t, db)
	hop(t, db, "crontab", "import", file).fails(t, ExitUsage,
		"unmappable.crontab:1: MAILTO=ops@example.com: no mail server is set up for this import",
		"unmappable.crontab:2: @reboot runs a command once when the machine boots",
		`unmappable.crontab:3: minute field "61": value 61 out of range 0-59`,
		`unmappable.crontab:4: CRON_TZ: unknown zone "Mars/Olympus"`,
		"unmappable.crontab:5: the time zone of line 4",
		"unmappable.crontab:6: want 5 time fields and a command",
		"6 lines of testdata/crontab/unmappable.crontab cannot be imported; nothing changed")
	if !bytes.Equal(before, readFile(t, db)) {
		t.Fatal("a refused import changed the database file")
	}
	// A dry run shows its plan, and fails as the import would.
	r := hop(t, db, "crontab", "import", "--dry-run", file)
	r.fails(t, ExitUsage, "unmappable.crontab:2: @reboot")
	r.has(t, "would create  cron-echo-ok", "would create 1, update 0, remove 0; 0 unchanged; 6 lines not imported")

	hop(t, db, "crontab", "import", "--skip-unmappable", file).ok(t).has(t, "create 1, update 0, remove 0; 0 unchanged; 6 lines not imported")
	if scheds := schedulesOf(t, db); len(scheds) != 1 || scheds["cron-echo-ok"] == nil || scheds["cron-echo-ok"].TimeZone != "UTC" {
		t.Fatalf("schedules %v", scheds)
	}
}

// TestCrontabImportDryRunNoDatabase: a dry run before the database
// exists shows the plan against an empty one, and creates no file.
func TestCrontabImportDryRunNoDatabase(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	hop(t, db, "crontab", "import", "--dry-run", "--skip-unmappable", "testdata/crontab/unmappable.crontab").ok(t).
		has(t, "would create  cron-echo-ok", "would create 1, update 0, remove 0")
	if _, err := os.Stat(db); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a dry run left a database file: %v", err)
	}
	// Without --dry-run the import still needs nothing but the file: it
	// creates the database.
	hop(t, db, "crontab", "import", "--skip-unmappable", "testdata/crontab/unmappable.crontab").ok(t)
	if scheds := schedulesOf(t, db); len(scheds) != 1 {
		t.Fatalf("schedules %v", scheds)
	}
}

// TestCrontabImportStdinJSONPrune reads a crontab from stdin, prints
// --json, and prunes the schedules of lines removed from it; a paused
// schedule stays paused across an update.
func TestCrontabImportStdinJSONPrune(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	var out struct {
		DryRun  bool `json:"dry_run"`
		Changes []struct {
			Action, Name string
			Line         int
			Paused       bool
			Args         kinds.ExecArgs
		} `json:"changes"`
		Problems []struct {
			Line         int
			Text, Reason string
		} `json:"problems"`
	}
	hopIn(t, db, "@daily /bin/a\n@hourly /bin/b%in\n", "--json", "crontab", "import", "--prefix", "x-", "-").ok(t).decode(&out)
	if out.DryRun || len(out.Changes) != 2 || out.Changes[1].Name != "x-b" || out.Changes[1].Action != "create" ||
		out.Changes[1].Line != 2 || out.Changes[1].Args.Stdin != "in" || len(out.Problems) != 0 {
		t.Fatalf("--json: %+v", out)
	}
	hop(t, db, "schedule", "pause", "x-b").ok(t)
	hopIn(t, db, "@weekly /bin/b%in\n@reboot /bin/c\n", "crontab", "import", "--prefix", "x-", "--prune", "--skip-unmappable", "--max-attempts", "3", "--overlap", "allow", "-").ok(t).
		has(t, "update  x-b", "remove  x-a", "create 0, update 1, remove 1; 0 unchanged; 1 line not imported")
	scheds := schedulesOf(t, db)
	if len(scheds) != 1 || scheds["x-b"] == nil || !scheds["x-b"].Paused || scheds["x-b"].Spec != "@weekly" ||
		scheds["x-b"].MaxAttempts != 3 || scheds["x-b"].Overlap != hopper.OverlapAllow {
		t.Fatalf("schedules after prune: %v", scheds)
	}
	hopIn(t, db, "@daily root /bin/r\n@daily www /bin/w\n", "crontab", "import", "--system", "--user", "root", "--skip-unmappable", "--prefix", "etc-", "-").ok(t).
		has(t, "create  etc-r", "create 1, update 0, remove 0; 0 unchanged; 1 line not imported")
	hopIn(t, db, "", "crontab", "import", "--prefix", "", "-").fails(t, ExitUsage, "bad --prefix: empty")
	hopIn(t, db, "", "crontab", "import", "--system", "-").fails(t, ExitUsage, "a system crontab needs the user")
	hopIn(t, db, "", "crontab", "import", "--overlap", "sometimes", "-").fails(t, ExitUsage, "--overlap")
	if r := hopIn(t, db, "@daily x\n", "crontab", "import", "-"); !strings.Contains(r.err, "1 line has no CRON_TZ or TZ before it") {
		t.Errorf("no note about the zone: %q", r.err)
	}
}

// TestEnqueueExecStdin: enqueue exec --stdin gives the command its input.
func TestEnqueueExecStdin(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	id := hop(t, db, "enqueue", "exec", "--stdin", "a%b\n", "--", "tr", "a-z", "A-Z").ok(t).id(t)
	j := work(t, db, id)[0]
	var res kinds.ExecResult
	if err := json.Unmarshal(j.Result, &res); err != nil || res.StdoutTail != "A%B\n" {
		t.Fatalf("job %+v: result %+v, %v", j, res, err)
	}
}

// TestCrontabImportMailto imports a crontab with MAILTO lines: without a
// mail server they are reported and nothing is imported; a dry run with
// --smtp shows the email channels it would make and changes nothing; the
// import makes them (the password from --smtp-password-env) and routes
// the schedules after each MAILTO to its channel; --mail-channel routes
// to a channel of the operator's instead; bad mail flags are refused.
func TestCrontabImportMailto(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	const file = "testdata/crontab/mailto.crontab"
	hop(t, db, "migrate").ok(t)
	before := readFile(t, db)
	hop(t, db, "crontab", "import", file).fails(t, ExitUsage,
		"mailto.crontab:5: MAILTO=ops@example.com: no mail server is set up for this import: give one (hopper crontab import --smtp HOST:PORT",
		"mailto.crontab:9: MAILFROM=cron@example.com: no mail server",
		"3 lines of testdata/crontab/mailto.crontab cannot be imported; nothing changed")

	smtp := []string{"crontab", "import", "--smtp", "smtp.example.com:587", "--mail-from", "hopper@example.com",
		"--smtp-username", "cron", "--smtp-password-env", "PATH"}
	r := hop(t, db, append(append([]string{}, smtp...), "--dry-run", file)...).ok(t).has(t,
		"would create  mailto-ops-example-com ", "channel: email to ops@example.com via smtp.example.com:587; the schedules naming it",
		"would create  mailto-ops-example-com-dev-example-com", "email to ops@example.com, dev@example.com",
		"would create  cron-sync ", "/opt/app/bin/sync [mail: channel mailto-ops-example-com]",
		"/opt/app/bin/cleanup [mail: channel mailto-ops-example-com-dev-example-com]",
		"dry run, nothing changed: would create 5, update 0, remove 0; 0 unchanged; 0 lines not imported; mail channels: create 2, update 0; 0 unchanged")
	if strings.Contains(r.out, "quiet [mail") || strings.Contains(r.out, "archive [mail") {
		t.Errorf("a schedule without MAILTO gets mail:\n%s", r.out)
	}
	if !strings.Contains(r.err, "note: testdata/crontab/mailto.crontab:10: CONTENT_TYPE shapes cron's mail only") {
		t.Errorf("no note about CONTENT_TYPE: %q", r.err)
	}
	if !bytes.Equal(before, readFile(t, db)) {
		t.Fatal("the dry run changed the database file")
	}

	var plan struct {
		Changes []struct {
			Action, Name string
			Line         int
			Channel      *hopper.Channel
			MailChannel  string `json:"mail_channel"`
		}
	}
	hop(t, db, append(append([]string{"--json"}, smtp...), "--dry-run", file)...).ok(t).decode(&plan)
	if len(plan.Changes) != 7 || plan.Changes[0].Channel == nil || plan.Changes[0].Line != 6 || plan.Changes[0].Channel.Password != job.RedactedSecret ||
		plan.Changes[3].Name != "cron-sync" || plan.Changes[3].MailChannel != "mailto-ops-example-com" || plan.Changes[2].MailChannel != "" {
		t.Fatalf("--json plan: %+v", plan)
	}

	hop(t, db, append(append([]string{}, smtp...), file)...).ok(t).has(t, "create 5, update 0, remove 0; 0 unchanged; 0 lines not imported; mail channels: create 2, update 0; 0 unchanged")
	var chans []*hopper.Channel
	hop(t, db, "--json", "channel", "list").ok(t).decode(&chans)
	if len(chans) != 2 || chans[0].Name != "mailto-ops-example-com" || chans[0].SMTPAddr != "smtp.example.com:587" ||
		chans[0].From != "hopper@example.com" || chans[0].Username != "cron" || chans[0].Password == "" ||
		chans[1].From != "cron@example.com" || !reflect.DeepEqual(chans[1].To, []string{"ops@example.com", "dev@example.com"}) {
		t.Fatalf("channels %+v", chans)
	}
	notify := map[string][]string{"cron-quiet": nil, "cron-sync": {"mailto-ops-example-com"}, "cron-report": {"mailto-ops-example-com"},
		"cron-cleanup": {"mailto-ops-example-com-dev-example-com"}, "cron-archive": nil}
	for name, sc := range schedulesOf(t, db) {
		var got []string
		if sc.Monitor != nil {
			got = sc.Monitor.Channels
		}
		if !reflect.DeepEqual(got, notify[name]) {
			t.Errorf("%s notifies %q, want %q", name, got, notify[name])
		}
	}
	hop(t, db, append(append([]string{}, smtp...), file)...).ok(t).has(t, "create 0, update 0, remove 0; 5 unchanged; 0 lines not imported; mail channels: create 0, update 0; 2 unchanged")

	// --mail-channel: the MAILTO schedules notify the operator's channel.
	hop(t, db, "crontab", "import", "--mail-channel", "pager", file).fails(t, ExitError, "mail channel pager: ")
	hop(t, db, "channel", "add", "pager", "--type", "command", "--", "/usr/local/bin/page").ok(t)
	hop(t, db, "crontab", "import", "--mail-channel", "pager", file).ok(t).has(t, "/opt/app/bin/sync [mail: channel pager]", "create 0, update 3, remove 0; 2 unchanged")
	if sc := schedulesOf(t, db)["cron-cleanup"]; sc.Monitor == nil || !reflect.DeepEqual(sc.Monitor.Channels, []string{"pager"}) {
		t.Errorf("cron-cleanup: monitor %+v, want pager", sc.Monitor)
	}

	hop(t, db, "crontab", "import", "--smtp", "smtp.example.com:25", "--mail-channel", "pager", file).fails(t, ExitUsage, "--smtp and --mail-channel: give one")
	hop(t, db, "crontab", "import", "--mail-from", "a@example.com", file).fails(t, ExitUsage, "need --smtp HOST:PORT")
	hop(t, db, "crontab", "import", "--smtp", "smtp.example.com", "--mail-from", "a@example.com", file).fails(t, ExitUsage, "bad --smtp: want host:port")
	hop(t, db, "crontab", "import", "--smtp", "smtp.example.com:25", file).fails(t, ExitUsage, "line 6 has a MAILTO and no MAILFROM before it: give the sender with --mail-from ADDRESS")
	hop(t, db, "crontab", "import", "--smtp", "smtp.example.com:25", "--smtp-password-env", "HOPPER_TEST_NOT_SET_ANYWHERE", file).fails(t, ExitUsage, "--smtp-password-env HOPPER_TEST_NOT_SET_ANYWHERE: the variable is not set")
}
