package crontab

import (
	"reflect"
	"strings"
	"testing"
)

// parse parses src with o, failing the test on an error.
func parse(t *testing.T, src string, o Options) *Table {
	t.Helper()
	tab, err := Parse(strings.NewReader(src), o)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return tab
}

func TestParseEntries(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		src  string
		o    Options
		want []Entry // Text and Line are checked apart
	}{
		{"five fields", "*/5 * * * * /usr/bin/backup --full\n", Options{},
			[]Entry{{Name: "cron-backup-full", Cron: "*/5 * * * *", Command: "/usr/bin/backup --full", Shell: "/bin/sh"}}},
		{"blanks and tabs", "  0\t2 * *   MON-FRI\t  echo  hi  \n", Options{},
			[]Entry{{Name: "cron-echo-hi", Cron: "0 2 * * MON-FRI", Command: "echo  hi  ", Shell: "/bin/sh"}}},
		{"macros", "@yearly a\n@ANNUALLY b\n@monthly c\n@weekly d\n@daily e\n@midnight f\n@hourly g\n", Options{},
			[]Entry{
				{Name: "cron-a", Cron: "@yearly", Command: "a", Shell: "/bin/sh"},
				{Name: "cron-b", Cron: "@annually", Command: "b", Shell: "/bin/sh"},
				{Name: "cron-c", Cron: "@monthly", Command: "c", Shell: "/bin/sh"},
				{Name: "cron-d", Cron: "@weekly", Command: "d", Shell: "/bin/sh"},
				{Name: "cron-e", Cron: "@daily", Command: "e", Shell: "/bin/sh"},
				{Name: "cron-f", Cron: "@midnight", Command: "f", Shell: "/bin/sh"},
				{Name: "cron-g", Cron: "@hourly", Command: "g", Shell: "/bin/sh"},
			}},
		{"comments, blank lines, CRLF", "# a comment\n\n   # indented\r\n0 0 * * * run # not a comment\r\n", Options{},
			[]Entry{{Name: "cron-run", Cron: "0 0 * * *", Command: "run # not a comment", Shell: "/bin/sh"}}},
		{"no final newline", "0 0 * * * last", Options{},
			[]Entry{{Name: "cron-last", Cron: "0 0 * * *", Command: "last", Shell: "/bin/sh"}}},
		{"percent: stdin", `0 0 * * * mail -s "hi" root%Dear root,%%it is 100\% done%`, Options{},
			[]Entry{{Name: "cron-mail-s-hi-root", Cron: "0 0 * * *", Command: `mail -s "hi" root`, Stdin: "Dear root,\n\nit is 100% done\n", Shell: "/bin/sh"}}},
		{"escaped percent in the command", `0 0 * * * date +\%Y-\%m-\%d > /tmp/d\n`, Options{},
			[]Entry{{Name: "cron-date-y-m-d", Cron: "0 0 * * *", Command: `date +%Y-%m-%d > /tmp/d\n`, Shell: "/bin/sh"}}},
		{"other backslashes kept", `0 0 * * * printf 'a\tb\\'%x\y\%`, Options{},
			[]Entry{{Name: "cron-printf-a-tb", Cron: "0 0 * * *", Command: `printf 'a\tb\\'`, Stdin: `x\y%`, Shell: "/bin/sh"}}},
		{"environment", "A=1\nB = two words \nC=\"quoted  \"\nD='single'\nE=\nA=3\n@daily env\nF=later\n", Options{},
			[]Entry{{Name: "cron-env", Cron: "@daily", Command: "env", Shell: "/bin/sh", Env: []string{"A=3", "B=two words", "C=quoted  ", "D=single", "E="}}}},
		{"shell and path", "SHELL=/bin/bash\nPATH=/opt/bin:/usr/bin\n@hourly x\n", Options{},
			[]Entry{{Name: "cron-x", Cron: "@hourly", Command: "x", Shell: "/bin/bash", Env: []string{"SHELL=/bin/bash", "PATH=/opt/bin:/usr/bin"}}}},
		{"zones", "@daily a\nCRON_TZ=Europe/Berlin\n0 2 * * * b\nTZ=America/New_York\n0 3 * * * c\nCRON_TZ=\nTZ=Asia/Tokyo\n0 4 * * * d\n", Options{},
			[]Entry{
				{Name: "cron-a", Cron: "@daily", Command: "a", Shell: "/bin/sh"},
				{Name: "cron-b", Cron: "0 2 * * *", TimeZone: "Europe/Berlin", Command: "b", Shell: "/bin/sh"},
				// CRON_TZ wins over a later TZ, which is only the command's
				{Name: "cron-c", Cron: "0 3 * * *", TimeZone: "Europe/Berlin", Command: "c", Shell: "/bin/sh", Env: []string{"TZ=America/New_York"}},
				{Name: "cron-d", Cron: "0 4 * * *", TimeZone: "Asia/Tokyo", Command: "d", Shell: "/bin/sh", Env: []string{"TZ=Asia/Tokyo"}},
			}},
		{"default zone", "@daily a\nTZ=Asia/Tokyo\n@daily b\nTZ=\n@daily c\n", Options{TimeZone: "Europe/Paris"},
			[]Entry{
				{Name: "cron-a", Cron: "@daily", TimeZone: "Europe/Paris", Command: "a", Shell: "/bin/sh"},
				{Name: "cron-b", Cron: "@daily", TimeZone: "Asia/Tokyo", Command: "b", Shell: "/bin/sh", Env: []string{"TZ=Asia/Tokyo"}},
				{Name: "cron-c", Cron: "@daily", TimeZone: "Europe/Paris", Command: "c", Shell: "/bin/sh", Env: []string{"TZ="}},
			}},
		{"empty MAILTO maps", "MAILTO=\"\"\n@daily a\n", Options{},
			[]Entry{{Name: "cron-a", Cron: "@daily", Command: "a", Shell: "/bin/sh"}}},
		{"names: same slug, prefix", "@daily /a/run.sh\n@hourly /b/run.sh\n@weekly run.sh >/dev/null 2>&1\n@daily \\%%%\n* * * * * $HOME/bin/sync.py -v | logger\n", Options{Prefix: "x/"},
			[]Entry{
				{Name: "x/run-sh", Cron: "@daily", Command: "/a/run.sh", Shell: "/bin/sh"},
				{Name: "x/run-sh-2", Cron: "@hourly", Command: "/b/run.sh", Shell: "/bin/sh"},
				{Name: "x/run-sh-3", Cron: "@weekly", Command: "run.sh >/dev/null 2>&1", Shell: "/bin/sh"},
				{Name: "x/line-4", Cron: "@daily", Command: "%", Stdin: "\n", Shell: "/bin/sh"},
				{Name: "x/sync-py-v", Cron: "* * * * *", Command: "$HOME/bin/sync.py -v | logger", Shell: "/bin/sh"},
			}},
		{"system crontab", "17 * * * * root cd / && run-parts --report /etc/cron.hourly\n@daily backup /usr/bin/backup\n", Options{System: true, User: "root"},
			[]Entry{{Name: "cron-cd", Cron: "17 * * * *", User: "root", Command: "cd / && run-parts --report /etc/cron.hourly", Shell: "/bin/sh"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tab := parse(t, tc.src, tc.o)
			var got []Entry
			for _, e := range tab.Entries {
				if e.Text == "" || e.Line < 1 || !strings.Contains(strings.Split(tc.src, "\n")[e.Line-1], e.Text) {
					t.Errorf("entry %q: line %d, text %q", e.Name, e.Line, e.Text)
				}
				g := *e
				g.Line, g.Text = 0, ""
				got = append(got, g)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("entries:\n got %+v\nwant %+v", got, tc.want)
			}
			if tc.name != "system crontab" && len(tab.Problems) > 0 {
				t.Errorf("problems: %v", tab.Problems)
			}
		})
	}
}

func TestParseProblems(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		src  string
		o    Options
		want []string // a part of each problem's String, in order
	}{
		{"@reboot", "@reboot /usr/bin/start\n", Options{}, []string{"line 1: @reboot runs a command once when the machine boots"}},
		{"unknown macro", "@every 5m x\n", Options{}, []string{"line 1: unknown macro @every"}},
		{"too few fields", "* * * *\n0 0 * * *\n@daily\n", Options{},
			[]string{"line 1: want 5 time fields and a command", "line 2: want 5 time fields", "line 3: want a macro such as @daily and a command"}},
		{"bad field", "61 * * * * x\n* * * FOO * y\n5-1 * * * * z\n", Options{},
			[]string{`line 1: minute field "61": value 61 out of range 0-59`, `line 2: month field "FOO"`, `line 3: minute field "5-1"`}},
		{"MAILTO without mail", "MAILTO=ops@example.com\nMAILFROM=cron@x\n@daily a\n", Options{},
			[]string{"line 1: MAILTO=ops@example.com: no mail server is set up for this import", "line 2: MAILFROM=cron@x: no mail server"}},
		{"MAILTO: a local user, a bad address", "MAILTO=root\nMAILTO=a@x, <b@y>\nMAILFROM=cron\n", Options{Mail: true},
			[]string{`line 1: MAILTO: "root" is a local user`, `line 2: MAILTO: "<b@y>" is not a mail address`, `line 3: MAILFROM: "cron" is a local user`}},
		{"bad zone, and the lines after it", "CRON_TZ=Mars/Olympus\n@daily a\nCRON_TZ=Local\n@daily b\nCRON_TZ=UTC\n@daily c\n", Options{},
			[]string{`line 1: CRON_TZ: unknown zone "Mars/Olympus"`, `line 2: the time zone of line 1: unknown zone`,
				`line 3: CRON_TZ: "Local" is each server's own zone`, `line 4: the time zone of line 3`}},
		{"unterminated quote", "A=\"open\n@daily a\n", Options{}, []string{`line 1: environment line: the value of A opens a " quote`}},
		{"empty SHELL", "SHELL=\n", Options{}, []string{"line 1: SHELL is empty"}},
		{"no command before %", "@daily %input\n", Options{}, []string{"line 1: no command before its %"}},
		{"not UTF-8", "@daily a\xff\n", Options{}, []string{"line 1: not valid UTF-8 text"}},
		{"exec args", "@daily " + strings.Repeat("x", 5000) + "%" + strings.Repeat("y", 70000) + "\n", Options{}, []string{"line 1: exec: stdin is 70000 bytes"}},
		{"other user", "@daily root a\n@daily www b\n0 0 * * * root\n", Options{System: true, User: "root"},
			[]string{"line 2: runs as user www, and this import maps the lines of root", "line 3: want 5 time fields, a user and a command"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tab := parse(t, tc.src, tc.o)
			if len(tab.Problems) != len(tc.want) {
				t.Fatalf("problems %q, want %d", tab.Problems, len(tc.want))
			}
			for i, p := range tab.Problems {
				if !strings.Contains(p.String(), tc.want[i]) {
					t.Errorf("problem %d: %q, want %q in it", i, p, tc.want[i])
				}
			}
		})
	}
}

// TestParseMail checks that, with Options.Mail, each entry carries the
// MAILTO and MAILFROM before it; MAILTO="" turns mail off, a bad MAILTO
// too (it is a problem); CONTENT_TYPE is a note; none is in the commands'
// environment.
func TestParseMail(t *testing.T) {
	t.Parallel()
	src := `@daily a
MAILTO=ops@example.com
@daily b
MAILTO = "ops@example.com, dev@example.com"
MAILFROM=cron@example.com
CONTENT_TYPE=text/plain
@daily c
MAILTO=""
@daily d
MAILTO=ops@example.com
MAILFROM=
@daily e
MAILTO=root
@daily f
`
	tab := parse(t, src, Options{Mail: true})
	type mail struct {
		to   []string
		from string
	}
	want := map[string]mail{
		"cron-a": {}, "cron-b": {[]string{"ops@example.com"}, ""},
		"cron-c": {[]string{"ops@example.com", "dev@example.com"}, "cron@example.com"},
		"cron-d": {nil, "cron@example.com"}, "cron-e": {[]string{"ops@example.com"}, ""}, "cron-f": {},
	}
	if len(tab.Entries) != len(want) {
		t.Fatalf("%d entries, want %d", len(tab.Entries), len(want))
	}
	for _, e := range tab.Entries {
		if got := (mail{e.MailTo, e.MailFrom}); !reflect.DeepEqual(got, want[e.Name]) {
			t.Errorf("%s: mail %+v, want %+v", e.Name, got, want[e.Name])
		}
		if len(e.Env) != 0 {
			t.Errorf("%s: environment %q, want none (mail settings are not the command's)", e.Name, e.Env)
		}
	}
	if len(tab.Problems) != 1 || tab.Problems[0].Line != 13 || !strings.Contains(tab.Problems[0].Reason, `"root" is a local user`) {
		t.Errorf("problems %q, want line 13's MAILTO=root", tab.Problems)
	}
	if len(tab.Notes) != 1 || tab.Notes[0].Line != 6 || !strings.Contains(tab.Notes[0].Reason, "CONTENT_TYPE shapes cron's mail only") {
		t.Errorf("notes %q, want line 6's CONTENT_TYPE", tab.Notes)
	}
}

func TestParseOptions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{TimeZone: "Nowhere/Land"}, `time zone: unknown zone "Nowhere/Land"`},
		{Options{TimeZone: "Local"}, `"Local" is each server's own zone`},
		{Options{System: true}, "a system crontab needs the user"},
		{Options{User: "root"}, "a user applies to a system crontab only"},
		{Options{Prefix: "a\nb"}, "want printable text"},
	} {
		_, err := Parse(strings.NewReader("@daily a\n"), tc.o)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", tc.o, err, tc.want)
		}
	}
}

// TestEntryArgs checks the exec job of an entry: its shell with -c, its
// environment and its input.
func TestEntryArgs(t *testing.T) {
	t.Parallel()
	tab := parse(t, "SHELL=/bin/bash\nX=1\n@daily cat%in%put\n", Options{})
	a := tab.Entries[0].Args()
	if a.Command != "/bin/bash" || !reflect.DeepEqual(a.Args, []string{"-c", "cat"}) || a.Stdin != "in\nput" ||
		!reflect.DeepEqual(a.Env, []string{"SHELL=/bin/bash", "X=1"}) {
		t.Errorf("args %+v", a)
	}
}
