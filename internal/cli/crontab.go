package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/crontab"
	"github.com/hopperq/hopper/internal/wire"
	"github.com/hopperq/hopper/kinds"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func (a *app) crontabCmd() *cobra.Command {
	return group("crontab", "Move crontab lines into Hopper schedules", a.crontabImportCmd())
}

// crontabFlags are crontab import's flags.
type crontabFlags struct {
	dryRun, skip, prune, system bool
	prefix, tz, user            string
	// The mail of MAILTO lines.
	smtp, mailFrom, smtpUser, smtpPasswordEnv, mailChannel string
	policyFlags
}

func (a *app) crontabImportCmd() *cobra.Command {
	var f crontabFlags
	c := &cobra.Command{
		Use:   "import [flags] FILE|-",
		Short: "Turn each line of a crontab into a schedule of an exec job",
		Long: `Read a crontab (crontab(5); "-" reads stdin) and make each command line a
schedule of an exec job, or show what it would do with --dry-run.

  m h dom mon dow COMMAND   the cron expression "m h dom mon dow"
  @daily COMMAND            @yearly @annually @monthly @weekly @daily
                            @midnight @hourly, as written
  CRON_TZ=Zone, TZ=Zone     the zone of the lines after it (default --tz,
                            else UTC); TZ is also in the commands' environment
  NAME=value, NAME="value"  in the environment of the commands after it
  SHELL=/bin/bash           runs the commands after it (default /bin/sh)
  COMMAND%text%more         "text\nmore" is the command's stdin; \% is a %
  MAILTO=a@example.com,b@…  with --smtp or --mail-channel: mail each failed
                            run and alert of the schedules after it;
                            MAILTO="" stops it; MAILFROM=addr is the sender

Each job runs "SHELL -c COMMAND". A schedule is named --prefix (default
cron-) and a slug of its command's first words, with -2, -3... for a repeated
slug: importing the file again updates the schedules it made (a paused one
stays paused) and leaves unchanged ones alone; --prune also removes the
schedules with the prefix and the tag "crontab" that the file no longer has.
The flags of "hopper schedule add" (--overlap, --catch-up, --jitter,
--queue, --tag, --timeout...) apply to every schedule; --max-attempts is 1
unless given (cron runs a command once a tick).

Cron mails each run's output to MAILTO. Hopper keeps every run's output
with its job ("hopper jobs output"), and with --smtp HOST:PORT it makes an
email channel per MAILTO (named mailto-ADDRESSES, sender MAILFROM, else
--mail-from) that the schedules after the line notify (schedule add
--notify): a run that fails for good (its job dead, which "hopper serve"
notifies) and each alert of their monitors (--start-grace, --max-duration,
--alert-after-failures) are mailed. --mail-channel NAME sends them to a
channel of yours instead. --dry-run shows the channels it would make.

A line that cannot be mapped is reported with its number and the reason:
@reboot, a MAILTO with an address when neither --smtp nor --mail-channel
is given, a MAILTO that is a local user (MAILTO=root: write the whole
address), a malformed line, an unknown zone, and, with --system, the lines
of another user than --user. Then nothing is imported unless
--skip-unmappable is given, which imports the other lines.

Exit code: 0 if every line was imported (or, with --skip-unmappable, every
line that maps); 1 if the database failed; 2 if a line cannot be mapped or
the command line is wrong: nothing changed (--dry-run prints its plan
still).`,
		Example: `  crontab -l | hopper crontab import --dry-run --tz Europe/Berlin -
  hopper crontab import --tz Europe/Berlin --overlap skip --catch-up latest my.crontab
  hopper crontab import --system --user root --prefix etc- /etc/crontab
  SMTP_PASSWORD=... hopper crontab import --smtp smtp.example.com:587 --mail-from cron@example.com \
      --smtp-username cron --smtp-password-env SMTP_PASSWORD my.crontab
  hopper crontab import --mail-channel ops my.crontab`,
		Args: exactArgs(1, "a crontab FILE, or - for stdin"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.crontabImport(cmd.Context(), cmd.Flags(), args[0], &f)
		},
	}
	fs := c.Flags()
	fs.BoolVar(&f.dryRun, "dry-run", false, "print what would be created, updated or removed, and change nothing")
	fs.StringVar(&f.prefix, "prefix", crontab.DefaultPrefix, "start of every schedule's name")
	fs.StringVar(&f.tz, "tz", "", "IANA zone of the lines without CRON_TZ or TZ before them: the zone of the machine the crontab ran on (default UTC)")
	fs.BoolVar(&f.skip, "skip-unmappable", false, "import the lines that map even if others do not (each is still reported)")
	fs.BoolVar(&f.prune, "prune", false, "remove the schedules with --prefix and the tag crontab that the file no longer has")
	fs.BoolVar(&f.system, "system", false, "a system crontab (/etc/crontab, /etc/cron.d): a user field follows the time fields; needs --user")
	fs.StringVar(&f.user, "user", "", "with --system: import the lines of this user (Hopper runs every command as its server's user)")
	fs.StringVar(&f.smtp, "smtp", "", "mail for MAILTO lines: the SMTP server, host:port, of the email channels made for them")
	fs.StringVar(&f.mailFrom, "mail-from", "", "with --smtp: the sender of their mail when no MAILFROM line precedes them")
	fs.StringVar(&f.smtpUser, "smtp-username", "", "with --smtp: the SMTP user (PLAIN authentication, over TLS unless the server is local)")
	fs.StringVar(&f.smtpPasswordEnv, "smtp-password-env", "", "with --smtp: the variable holding the SMTP password")
	fs.StringVar(&f.mailChannel, "mail-channel", "", "mail for MAILTO lines: send their schedules' notifications to this existing channel (hopper channel add) instead of making email channels")
	f.policyFlags.register(fs)
	ma := fs.Lookup("max-attempts")
	ma.DefValue, ma.Usage = strconv.Itoa(crontabMaxAttempts), fmt.Sprintf("attempts before the job goes to the dead-letter queue, 1 to %d: 1 runs a command once a tick, as cron; more retry a failed run", hopper.MaxAttemptsLimit)
	return c
}

// crontabMaxAttempts is the default --max-attempts of crontab import: cron
// runs a command once a tick, never again if it fails.
const crontabMaxAttempts = 1

// crontabChange is a change in crontab import's --json output.
type crontabChange struct {
	Action   crontab.Action `json:"action"`
	Name     string         `json:"name"`
	Line     int            `json:"line,omitempty"`
	Cron     string         `json:"cron,omitempty"`
	TimeZone string         `json:"time_zone,omitempty"`
	Paused   bool           `json:"paused,omitempty"`
	Args     any            `json:"args,omitempty"`
	// Channel, for a MAILTO's email channel, is the channel without its
	// secrets.
	Channel *hopper.Channel `json:"channel,omitempty"`
	// MailChannel names the channel a schedule's notifications go to for
	// its MAILTO.
	MailChannel string `json:"mail_channel,omitempty"`
}

// crontabProblem is a problem in crontab import's --json output.
type crontabProblem struct {
	Line   int    `json:"line"`
	Text   string `json:"text"`
	Reason string `json:"reason"`
}

func (a *app) crontabImport(ctx context.Context, fs *pflag.FlagSet, file string, f *crontabFlags) error {
	if f.prefix == "" {
		return usagef("bad --prefix: empty; the prefix marks the schedules an import made (default %s)", crontab.DefaultPrefix)
	}
	d := wire.Schedule{Name: "crontab", Kind: kinds.KindExec}
	f.policyFlags.document(fs, &d)
	if !fs.Changed("max-attempts") { // cron runs a command once a tick
		once := crontabMaxAttempts
		d.Options.MaxAttempts = &once
	}
	tmpl, err := d.ScheduleOptions()
	if err != nil {
		return flagError(fs, err)
	}
	mail, err := f.mail()
	if err != nil {
		return err
	}
	tab, label, err := a.readCrontab(file, crontab.Options{Prefix: f.prefix, TimeZone: f.tz, System: f.system, User: f.user, Mail: mail != nil})
	if err != nil {
		return err
	}
	ko, err := envOptions()
	if err != nil {
		return err
	}
	// A command the exec allow-list refuses is a problem of its line, found
	// before anything changes.
	entries := tab.Entries[:0:0]
	for _, e := range tab.Entries {
		raw, err := json.Marshal(e.Args())
		if err == nil {
			err = ko.ValidateArgs(kinds.KindExec, raw)
		}
		if err != nil {
			tab.Problems = append(tab.Problems, crontab.Problem{Line: e.Line, Text: e.Text, Reason: err.Error()})
			continue
		}
		entries = append(entries, e)
	}
	tab.Entries = entries
	if err := checkMailChannels(tab, mail); err != nil {
		return err
	}
	for _, p := range tab.Problems {
		fmt.Fprintf(a.Err, "hopper: %s:%d: %s\n    %s\n", label, p.Line, p.Reason, p.Text)
	}
	for _, p := range tab.Notes {
		fmt.Fprintf(a.Err, "hopper: note: %s:%d: %s\n    %s\n", label, p.Line, p.Reason, p.Text)
	}
	if tab.Zoneless > 0 && f.tz == "" {
		fmt.Fprintf(a.Err, "hopper: note: %d %s no CRON_TZ or TZ before %s and %s read in UTC; cron read %s in its machine's zone: pass --tz ZONE (e.g. --tz Europe/Berlin) to keep the times\n",
			tab.Zoneless, plural(tab.Zoneless, "line has", "lines have"), plural(tab.Zoneless, "it", "them"), plural(tab.Zoneless, "is", "are"), plural(tab.Zoneless, "it", "them"))
	}
	refused := len(tab.Problems) > 0 && !f.skip
	o := crontab.ImportOptions{Prefix: f.prefix, Template: tmpl, DryRun: f.dryRun || refused, Prune: f.prune, Mail: mail}
	if refused && !f.dryRun {
		return usagef("%d %s of %s cannot be imported; nothing changed (fix %s, or pass --skip-unmappable to import the others)",
			len(tab.Problems), plural(len(tab.Problems), "line", "lines"), label, plural(len(tab.Problems), "it", "them"))
	}
	access := create
	if o.DryRun {
		access = readOnly
	}
	run := func(c *hopper.Client) error {
		changes, err := crontab.Import(ctx, c, tab, o)
		if perr := a.printCrontabChanges(changes, tab, o.DryRun); perr != nil && err == nil {
			err = perr
		}
		if err != nil {
			return err
		}
		if refused {
			return usagef("%d %s of %s cannot be imported (fix %s, or pass --skip-unmappable to import the others)",
				len(tab.Problems), plural(len(tab.Problems), "line", "lines"), label, plural(len(tab.Problems), "it", "them"))
		}
		return nil
	}
	err = a.withSession(ctx, openOpts{access: access}, func(s *session) error { return run(s.Client) })
	var none *noDatabaseError
	if !o.DryRun || !errors.As(err, &none) {
		return err
	}
	// A dry run before the database exists: it holds no schedule, so the
	// plan is the import's into an empty store, and nothing is created.
	fmt.Fprintf(a.Err, "hopper: note: no database at %s yet: the plan is against an empty one\n", none.path)
	c, err := hopper.NewClient(hopper.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	defer c.StopNow()
	return run(c)
}

// mail returns the mail settings the flags give, nil for none.
func (f *crontabFlags) mail() (*crontab.Mail, error) {
	switch {
	case f.smtp != "" && f.mailChannel != "":
		return nil, usagef("--smtp and --mail-channel: give one (--smtp makes email channels for the MAILTO lines, --mail-channel sends to a channel of yours)")
	case f.smtp == "" && (f.mailFrom != "" || f.smtpUser != "" || f.smtpPasswordEnv != ""):
		return nil, usagef("--mail-from, --smtp-username and --smtp-password-env need --smtp HOST:PORT")
	case f.mailChannel != "":
		return &crontab.Mail{Channel: f.mailChannel}, nil
	case f.smtp == "":
		return nil, nil
	}
	m := &crontab.Mail{SMTPAddr: f.smtp, From: f.mailFrom, Username: f.smtpUser}
	if f.smtpPasswordEnv != "" {
		v, ok := os.LookupEnv(f.smtpPasswordEnv)
		if !ok || v == "" {
			return nil, usagef("--smtp-password-env %s: the variable is not set", f.smtpPasswordEnv)
		}
		m.Password = v
	}
	return m, nil
}

// checkMailChannels refuses the email channels of tab's MAILTO lines that
// could not be made, naming the flag or line at fault, before anything
// changes.
func checkMailChannels(tab *crontab.Table, mail *crontab.Mail) error {
	if mail == nil {
		return nil
	}
	for _, e := range tab.Entries {
		ch := mail.MailChannel(e)
		if ch == nil {
			continue
		}
		err := ch.Check()
		var fe *hopper.FieldError
		if !errors.As(err, &fe) {
			continue
		}
		switch fe.Field {
		case "smtp_addr":
			return usagef("bad --smtp: %s", fe.Reason)
		case "from":
			if ch.From == "" {
				return usagef("line %d has a MAILTO and no MAILFROM before it: give the sender with --mail-from ADDRESS", e.Line)
			}
		}
		return usagef("line %d: the email channel of its MAILTO: %s: %s", e.Line, fe.Field, fe.Reason)
	}
	return nil
}

// readCrontab parses file ("-": stdin) and returns it with its name for
// messages.
func (a *app) readCrontab(file string, o crontab.Options) (*crontab.Table, string, error) {
	var r io.Reader = a.In
	label := "stdin"
	if file != "-" {
		fh, err := os.Open(file)
		if err != nil {
			return nil, "", fmt.Errorf("crontab: %w", err)
		}
		defer fh.Close()
		r, label = fh, file
	}
	tab, err := crontab.Parse(r, o)
	if err != nil {
		if strings.HasPrefix(err.Error(), "crontab: read") {
			return nil, "", err
		}
		return nil, "", usageError{err}
	}
	return tab, label, nil
}

// printCrontabChanges prints what crontab import did, or would do.
func (a *app) printCrontabChanges(changes []crontab.Change, tab *crontab.Table, dryRun bool) error {
	if a.json {
		out := struct {
			DryRun   bool             `json:"dry_run"`
			Changes  []crontabChange  `json:"changes"`
			Problems []crontabProblem `json:"problems"`
			Notes    []crontabProblem `json:"notes"`
		}{DryRun: dryRun, Changes: []crontabChange{}, Problems: []crontabProblem{}, Notes: []crontabProblem{}}
		for _, ch := range changes {
			c := crontabChange{Action: ch.Action, Name: ch.Name, Paused: ch.Paused}
			switch e := ch.Entry; {
			case ch.Channel != nil:
				c.Line, c.Channel = e.Line, ch.Channel.Redacted()
			case e != nil:
				c.Line, c.Cron, c.TimeZone, c.Args, c.MailChannel = e.Line, e.Cron, e.TimeZone, e.Args(), ch.MailChannel
			}
			out.Changes = append(out.Changes, c)
		}
		for _, p := range tab.Problems {
			out.Problems = append(out.Problems, crontabProblem(p))
		}
		for _, p := range tab.Notes {
			out.Notes = append(out.Notes, crontabProblem(p))
		}
		return printJSON(a.Out, out)
	}
	counts, chanCounts := map[crontab.Action]int{}, map[crontab.Action]int{}
	t := newTable(a.Out, "ACTION", "NAME", "LINE", "WHEN", "COMMAND")
	for _, ch := range changes {
		action := string(ch.Action)
		if dryRun && ch.Action != crontab.Unchanged {
			action = "would " + action
		}
		if ch.Channel != nil {
			chanCounts[ch.Action]++
			t.row(action, ch.Name, ch.Entry.Line, "-", "channel: "+describeChannel(ch.Channel.Redacted()))
			continue
		}
		counts[ch.Action]++
		if ch.Entry == nil {
			t.row(action, ch.Name, "-", "-", "-")
			continue
		}
		e := ch.Entry
		when := e.Cron
		if e.TimeZone != "" {
			when += " (" + e.TimeZone + ")"
		}
		command := commandText(e)
		if r := ch.MailChannel; r != "" {
			command += " [mail: channel " + r + "]"
		}
		t.row(action, ch.Name, e.Line, when, command)
	}
	if len(changes) > 0 {
		if err := t.flush(); err != nil {
			return err
		}
	}
	verb := ""
	if dryRun {
		verb = "dry run, nothing changed: would "
	}
	mail := ""
	if len(chanCounts) > 0 {
		mail = fmt.Sprintf("; mail channels: create %d, update %d; %d unchanged", chanCounts[crontab.Create], chanCounts[crontab.Update], chanCounts[crontab.Unchanged])
	}
	_, err := fmt.Fprintf(a.Out, "%screate %d, update %d, remove %d; %d unchanged; %d %s not imported%s\n", verb,
		counts[crontab.Create], counts[crontab.Update], counts[crontab.Remove], counts[crontab.Unchanged],
		len(tab.Problems), plural(len(tab.Problems), "line", "lines"), mail)
	return err
}

// commandText describes an entry's job in one line: the command, and its
// shell, input and environment when they are not the defaults.
func commandText(e *crontab.Entry) string {
	s := truncate(e.Command, 60)
	var extra []string
	if e.Shell != crontab.DefaultShell {
		extra = append(extra, "shell "+e.Shell)
	}
	if e.Stdin != "" {
		extra = append(extra, fmt.Sprintf("stdin %d bytes", len(e.Stdin)))
	}
	if len(e.Env) > 0 {
		names := make([]string, len(e.Env))
		for i, kv := range e.Env {
			names[i], _, _ = strings.Cut(kv, "=")
		}
		extra = append(extra, "env "+strings.Join(names, ","))
	}
	if len(extra) > 0 {
		s += " [" + strings.Join(extra, "; ") + "]"
	}
	return s
}
