// Package crontab reads crontab(5) files and turns each command line into a
// Hopper schedule of the exec kind: [Parse] reads a file into a [Table] of
// entries and problems, and [Import] creates, updates (and, with
// ImportOptions.Prune, removes) the schedules on a client, or only says
// what it would do. It is what "hopper crontab import" runs; see
// docs/moving-from-cron.md.
//
// # What a line becomes
//
// A command line ("m h dom mon dow command", or "@daily command" and the
// other macros) becomes a schedule named Options.Prefix plus a slug of its
// command (see [Entry.Name]) whose cron expression is the line's time
// fields, read in the zone of the CRON_TZ or TZ line before it (else
// Options.TimeZone, else UTC). Its job runs the shell of the SHELL line
// before it (default /bin/sh) as "SHELL -c COMMAND", with the variables of
// the environment lines before it, and with the text after the command's
// first unescaped "%" as its standard input, each further "%" a newline
// (crontab(5); "\%" is a literal "%").
//
// With Options.Mail, a MAILTO line's addresses (and the MAILFROM line's
// sender) are kept on the entries after it ([Entry.MailTo]), and [Import]
// routes their schedules' notifications (a dead run, the monitor's
// incidents) to an email channel (see [Mail]); MAILTO="" turns mail off
// again, as in cron.
//
// A line that cannot be mapped — @reboot, a MAILTO with an address when
// no mail is set up (Options.Mail), a malformed line, a zone that does not
// exist — is a [Problem] naming the line and the reason; a line read but
// without effect (CONTENT_TYPE…) is a note ([Table.Notes]): Parse drops
// nothing silently.
package crontab

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hopperq/hopper/kinds"
	"github.com/hopperq/hopper/schedule"
)

// DefaultPrefix is the prefix of the schedules' names when Options.Prefix
// is empty.
const DefaultPrefix = "cron-"

// DefaultShell is the shell of commands when no SHELL line precedes them,
// as in cron.
const DefaultShell = "/bin/sh"

// Options say how Parse reads a crontab. The zero value reads a user's
// crontab (no user field) in UTC, naming schedules "cron-…".
type Options struct {
	// Prefix starts the name of every schedule (default DefaultPrefix). It
	// also marks the schedules an import owns: ImportOptions.Prune removes
	// only schedules with this prefix and the Tag.
	Prefix string
	// TimeZone is the IANA zone of the lines no CRON_TZ or TZ line
	// precedes (default UTC). Cron reads them in the zone of the machine
	// it runs on: give that machine's zone to keep their times.
	TimeZone string
	// System reads a system crontab (/etc/crontab, /etc/cron.d/*), whose
	// lines have a user field after the time fields. Hopper runs every
	// command as the one user of its server (hopper serve --exec-user), so
	// only the lines of User are mapped; the others are problems.
	System bool
	// User, with System, is the user whose lines are mapped (required
	// with System, refused without it).
	User string
	// Mail says the import sets up mail (see [Mail]): the addresses of a
	// MAILTO line, and the sender of a MAILFROM line, go to the entries
	// after it (Entry.MailTo, Entry.MailFrom). Without it, a MAILTO or
	// MAILFROM with a value is a Problem.
	Mail bool
}

// Table is what Parse read from a crontab.
type Table struct {
	// Entries are the command lines that map to schedules, in file order.
	Entries []*Entry
	// Problems are the lines that do not map, in file order: each is
	// reported, none is dropped silently.
	Problems []Problem
	// Notes are the lines read without effect, in file order:
	// CONTENT_TYPE and CONTENT_TRANSFER_ENCODING, which shape cron's mail
	// only (Hopper's mail has its own form).
	Notes []Problem
	// Zoneless is the number of entries read in Options.TimeZone because
	// no CRON_TZ or TZ line preceded them.
	Zoneless int
}

// Entry is one command line of a crontab that maps to a schedule.
type Entry struct {
	// Line is the line's number, from 1.
	Line int
	// Text is the line as written (without its line ending).
	Text string
	// Name is the schedule's name: Options.Prefix and a slug of the
	// command (lower-case letters and digits of its first words, the
	// program by its base name, joined by "-", at most 40 bytes), with
	// "-2", "-3"… added to the second and later entries whose slugs are
	// the same. It stays the same across imports of the file as long as
	// the command and the order of the entries with the same slug do; a
	// command without letters or digits is named "line-N".
	Name string
	// Cron is the schedule's cron expression: the line's five time fields
	// as written, or its macro (@daily…) in lower case.
	Cron string
	// TimeZone is the IANA zone Cron is read in; "" is UTC.
	TimeZone string
	// User is the line's user field (System crontabs only).
	User string
	// Command is the command: the text before the first unescaped "%",
	// with "\%" turned into "%".
	Command string
	// Stdin is the text after the first unescaped "%", each further
	// unescaped "%" turned into a newline and "\%" into "%" (crontab(5));
	// "" without one.
	Stdin string
	// Shell is the program that runs Command with "-c": the SHELL line
	// before it, else DefaultShell.
	Shell string
	// Env holds the environment lines before it, "NAME=value", one per
	// name (a later line replaces an earlier one's value), in the order
	// the names first appear. CRON_TZ and the mail settings (MAILTO,
	// MAILFROM, CONTENT_TYPE, CONTENT_TRANSFER_ENCODING) are not in it;
	// SHELL, PATH and TZ are.
	Env []string
	// MailTo are the addresses of the MAILTO line before it (with
	// Options.Mail), in the order written; nil without one, or after
	// MAILTO="" (no mail).
	MailTo []string
	// MailFrom is the sender of the MAILFROM line before it (with
	// Options.Mail); "" without one.
	MailFrom string
}

// Args returns the args of the entry's exec job: Shell -c Command, with
// Env and Stdin.
func (e *Entry) Args() kinds.ExecArgs {
	return kinds.ExecArgs{Command: e.Shell, Args: []string{"-c", e.Command}, Env: slices.Clone(e.Env), Stdin: e.Stdin}
}

// Problem is a line of a crontab that does not map to a schedule.
type Problem struct {
	// Line is the line's number, from 1.
	Line int
	// Text is the line as written (without its line ending).
	Text string
	// Reason says why the line does not map, and what to do instead.
	Reason string
}

// String returns "line N: REASON: TEXT".
func (p Problem) String() string {
	return fmt.Sprintf("line %d: %s: %s", p.Line, p.Reason, p.Text)
}

// macros are the crontab macros Parse maps, each to itself in lower case.
var macros = []string{"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"}

// mailVars are cron's mail settings: never in a command's environment.
var mailVars = []string{"MAILTO", "MAILFROM", "CONTENT_TYPE", "CONTENT_TRANSFER_ENCODING"}

// Validate reports what is wrong with o, if anything.
func (o Options) Validate() error {
	if o.Prefix != "" && (strings.ContainsFunc(o.Prefix, func(r rune) bool { return r < ' ' || r == 0x7f }) || !utf8.ValidString(o.Prefix)) {
		return fmt.Errorf("crontab: prefix %q: want printable text", o.Prefix)
	}
	if len(o.Prefix) > 128 {
		return fmt.Errorf("crontab: prefix is %d bytes, more than 128", len(o.Prefix))
	}
	if o.TimeZone != "" {
		if _, err := loadZone(o.TimeZone); err != nil {
			return fmt.Errorf("crontab: time zone: %w", err)
		}
	}
	switch {
	case o.System && strings.TrimSpace(o.User) == "":
		return errors.New("crontab: a system crontab needs the user whose lines to map (Options.User)")
	case !o.System && o.User != "":
		return errors.New("crontab: a user applies to a system crontab only (Options.System)")
	}
	return nil
}

// loadZone loads an IANA zone, refusing "Local" (each server's own zone).
func loadZone(name string) (*time.Location, error) {
	if name == "Local" {
		return nil, errors.New(`"Local" is each server's own zone; want an IANA name such as Europe/Berlin`)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("unknown zone %q (want an IANA name such as Europe/Berlin)", name)
	}
	return loc, nil
}

// Parse reads a crontab from r. Blank lines and comments (lines whose first
// non-blank character is "#") are skipped; every other line is an
// environment line (NAME=value, NAME = "value" or 'value'), which applies
// to the command lines after it, or a command line, which becomes an Entry
// or a Problem. The error is r's, or o's (see Options.Validate); a line
// that does not map is never an error, but a Problem.
func Parse(r io.Reader, o Options) (*Table, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	p := &parser{o: o, t: &Table{}, shell: DefaultShell, zone: o.TimeZone}
	br := bufio.NewReader(r)
	for n := 1; ; n++ {
		line, err := br.ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("crontab: read line %d: %w", n, err)
		}
		if line == "" && err != nil {
			break
		}
		line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
		p.line(n, line)
		if err != nil {
			break
		}
	}
	p.name()
	return p.t, nil
}

// parser is the state of Parse: the settings of the lines read so far.
type parser struct {
	o     Options
	t     *Table
	shell string
	// zone is the zone in force ("" UTC); zoneErr, if set, is why the
	// last CRON_TZ or TZ line's zone cannot be used.
	zone, zoneErr string
	// cronTZ says a CRON_TZ line set zone, which a later TZ does not
	// change.
	cronTZ bool
	zoned  bool
	env    []string
	// mailTo and mailFrom are the MAILTO and MAILFROM in force.
	mailTo   []string
	mailFrom string
}

// problem records a line that does not map.
func (p *parser) problem(n int, text, format string, args ...any) {
	p.t.Problems = append(p.t.Problems, Problem{Line: n, Text: text, Reason: fmt.Sprintf(format, args...)})
}

// line reads line number n.
func (p *parser) line(n int, text string) {
	s := strings.TrimLeft(text, " \t")
	switch {
	case !utf8.ValidString(text):
		p.problem(n, strings.ToValidUTF8(text, "\uFFFD"), "not valid UTF-8 text")
	case s == "" || strings.HasPrefix(s, "#"):
	default:
		name, value, isEnv, err := envLine(s)
		switch {
		case !isEnv:
			p.entry(n, text, s)
		case err != "":
			p.problem(n, text, "environment line: %s", err)
		default:
			p.setEnv(n, text, name, value)
		}
	}
}

// envLine splits an environment line "NAME = value" (as cron does: blanks
// around "=" are allowed, a value in matching single or double quotes
// keeps its blanks, an unquoted one loses its trailing blanks). isEnv is
// false for a line that is not one; err says what is wrong with one that
// is.
func envLine(s string) (name, value string, isEnv bool, err string) {
	i := strings.IndexAny(s, " \t=")
	if i <= 0 {
		return "", "", false, ""
	}
	name, rest := s[:i], strings.TrimLeft(s[i:], " \t")
	if !strings.HasPrefix(rest, "=") {
		return "", "", false, ""
	}
	value = strings.Trim(rest[1:], " \t")
	if value != "" && (value[0] == '"' || value[0] == '\'') {
		q := value[0]
		if len(value) < 2 || value[len(value)-1] != q {
			return name, "", true, fmt.Sprintf("the value of %s opens a %c quote that does not close at the end of the line", name, q)
		}
		value = value[1 : len(value)-1]
	}
	return name, value, true, ""
}

// setEnv applies the environment line NAME=value at line n.
func (p *parser) setEnv(n int, text, name, value string) {
	switch {
	case name == "CRON_TZ" || name == "TZ" && !p.cronTZ:
		p.zone, p.zoneErr, p.zoned = value, "", value != ""
		p.cronTZ = name == "CRON_TZ" && value != ""
		if value == "" {
			p.zone = p.o.TimeZone
		} else if _, err := loadZone(value); err != nil {
			p.zoneErr = fmt.Sprintf("the time zone of line %d: %v", n, err)
			p.problem(n, text, "%s: %v", name, err)
		}
		if name == "CRON_TZ" {
			return
		}
	case name == "SHELL":
		if value == "" {
			p.problem(n, text, "SHELL is empty: want the path of a shell (commands run as SHELL -c COMMAND)")
			return
		}
		p.shell = value
	case slices.Contains(mailVars, name):
		p.setMail(n, text, name, value)
		return
	}
	kv := name + "=" + value
	if i := slices.IndexFunc(p.env, func(e string) bool { return strings.HasPrefix(e, name+"=") }); i >= 0 {
		p.env[i] = kv
	} else {
		p.env = append(p.env, kv)
	}
}

// setMail applies the mail setting NAME=value at line n.
func (p *parser) setMail(n int, text, name, value string) {
	switch {
	case name != "MAILTO" && name != "MAILFROM":
		if value != "" {
			p.t.Notes = append(p.t.Notes, Problem{Line: n, Text: text,
				Reason: name + " shapes cron's mail only: Hopper's mail has its own form, so the line has no effect"})
		}
	case value == "":
		// MAILTO="": no mail, as in cron; MAILFROM="": the default sender.
		if name == "MAILTO" {
			p.mailTo = nil
		} else {
			p.mailFrom = ""
		}
	case !p.o.Mail:
		p.problem(n, text, "%s=%s: no mail server is set up for this import: give one (hopper crontab import --smtp HOST:PORT --mail-from ADDRESS, or --mail-channel NAME) to mail each failed run and each alert of the schedules after it, or remove the line (each run's output is kept with its job; see docs/moving-from-cron.md, \"Output and mail\")", name, value)
	case name == "MAILFROM":
		if err := checkAddress(value); err != "" {
			p.problem(n, text, "MAILFROM: %s", err)
			return
		}
		p.mailFrom = value
	default:
		var to []string
		for a := range strings.SplitSeq(value, ",") {
			a = strings.TrimSpace(a)
			if a == "" {
				continue
			}
			if err := checkAddress(a); err != "" {
				p.problem(n, text, "MAILTO: %s: the schedules after it get no mail until the next MAILTO", err)
				p.mailTo = nil
				return
			}
			to = append(to, a)
		}
		p.mailTo = to
	}
}

// checkAddress says what is wrong with the mail address a, if anything:
// Hopper sends mail through an SMTP server, so a local user name (cron's
// MAILTO=root) needs its domain.
func checkAddress(a string) string {
	switch {
	case strings.ContainsAny(a, "\r\n<>\" \t"):
		return fmt.Sprintf("%q is not a mail address", a)
	case !strings.Contains(a, "@"):
		return fmt.Sprintf("%q is a local user, and Hopper sends mail through an SMTP server: write the whole address (%s@example.com)", a, a)
	}
	return ""
}

// entry reads a command line, s being text without its leading blanks.
func (p *parser) entry(n int, text, s string) {
	e := &Entry{Line: n, Text: text, TimeZone: p.zone, Shell: p.shell, Env: slices.Clone(p.env),
		MailTo: slices.Clone(p.mailTo), MailFrom: p.mailFrom}
	nf := 5
	if strings.HasPrefix(s, "@") {
		nf = 1
	}
	if p.o.System {
		nf++
	}
	fields, rest := splitFields(s, nf)
	if len(fields) < nf || strings.TrimSpace(rest) == "" {
		what := "5 time fields"
		if nf == 1 || nf == 2 && p.o.System {
			what = "a macro such as @daily"
		}
		if p.o.System {
			what += ", a user"
		}
		p.problem(n, text, "want %s and a command", what)
		return
	}
	if p.o.System {
		e.User, fields = fields[len(fields)-1], fields[:len(fields)-1]
	}
	if nf <= 2 {
		macro := strings.ToLower(fields[0])
		switch {
		case macro == "@reboot":
			p.problem(n, text, "@reboot runs a command once when the machine boots, and Hopper schedules have no boot event: start it from your init system (a systemd unit) instead")
			return
		case !slices.Contains(macros, macro):
			p.problem(n, text, "unknown macro %s (want %s, or five time fields)", fields[0], strings.Join(macros, ", "))
			return
		}
		e.Cron = macro
	} else {
		e.Cron = strings.Join(fields, " ")
	}
	if p.zoneErr != "" {
		p.problem(n, text, "%s", p.zoneErr)
		return
	}
	var loc *time.Location
	if e.TimeZone != "" {
		loc, _ = loadZone(e.TimeZone) // checked by setEnv or Validate
	}
	if _, err := schedule.Parse(e.Cron, loc); err != nil {
		var pe *schedule.ParseError
		if errors.As(err, &pe) && pe.Field != "" {
			p.problem(n, text, "%s field %q: %s", pe.Field, pe.Value, pe.Reason)
		} else {
			p.problem(n, text, "%v", err)
		}
		return
	}
	if p.o.System && e.User != p.o.User {
		p.problem(n, text, "runs as user %s, and this import maps the lines of %s: Hopper runs every command as its server's user (hopper serve --exec-user); import the lines of %s into a server running as that user with --user %s", e.User, p.o.User, e.User, e.User)
		return
	}
	e.Command, e.Stdin = splitPercent(strings.TrimLeft(rest, " \t"))
	if strings.TrimSpace(e.Command) == "" {
		p.problem(n, text, "no command before its %% (the text after the first %% is the command's input)")
		return
	}
	a := e.Args()
	if err := a.Validate(); err != nil {
		p.problem(n, text, "%v", err)
		return
	}
	if !p.zoned {
		p.t.Zoneless++
	}
	p.t.Entries = append(p.t.Entries, e)
}

// splitFields returns the first n blank-separated fields of s and the rest
// of s after them (with its leading blank).
func splitFields(s string, n int) (fields []string, rest string) {
	rest = s
	for len(fields) < n {
		rest = strings.TrimLeft(rest, " \t")
		if rest == "" {
			break
		}
		i := strings.IndexAny(rest, " \t")
		if i < 0 {
			i = len(rest)
		}
		fields, rest = append(fields, rest[:i]), rest[i:]
	}
	return fields, rest
}

// splitPercent splits a crontab command at its first unescaped "%": the
// command before it, with "\%" turned into "%" (other backslashes kept),
// and the input after it, with "%" turned into a newline and "\%" into
// "%", as cron does.
func splitPercent(s string) (command, stdin string) {
	var b strings.Builder
	i := 0
	for ; i < len(s); i++ {
		c := s[i]
		if c == '\\' && i+1 < len(s) && s[i+1] == '%' {
			b.WriteByte('%')
			i++
			continue
		}
		if c == '%' {
			break
		}
		b.WriteByte(c)
	}
	command = b.String()
	if i >= len(s) {
		return command, ""
	}
	b.Reset()
	for i++; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' && i+1 < len(s) && s[i+1] == '%':
			b.WriteByte('%')
			i++
		case c == '%':
			b.WriteByte('\n')
		default:
			b.WriteByte(c)
		}
	}
	return command, b.String()
}

// name gives every entry its name (see Entry.Name).
func (p *parser) name() {
	prefix := cmp.Or(p.o.Prefix, DefaultPrefix)
	taken := map[string]bool{}
	for _, e := range p.t.Entries {
		base := prefix + slug(e.Command, e.Line)
		name := base
		for i := 2; taken[name]; i++ {
			name = fmt.Sprintf("%s-%d", base, i)
		}
		taken[name] = true
		e.Name = name
	}
}

// maxSlug bounds the slug of a command, in bytes.
const maxSlug = 40

// slug is the part of a schedule's name made from its command: see
// Entry.Name.
func slug(command string, line int) string {
	var parts []string
	size := 0
	for _, w := range strings.Fields(command) {
		if len(parts) == 4 {
			break
		}
		// A shell operator ends the first command, and the slug.
		last := false
		if i := strings.IndexAny(w, "<>|&;()`#"); i >= 0 {
			if strings.Trim(w[:i], "0123456789") == "" { // a redirection such as 2>&1
				w = ""
			}
			w, last = w[:min(i, len(w))], true
		}
		if i := strings.LastIndexByte(strings.TrimRight(w, "/"), '/'); i >= 0 {
			w = w[i+1:]
		}
		part := strings.Trim(strings.Map(func(r rune) rune {
			switch {
			case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
				return r
			case r >= 'A' && r <= 'Z':
				return r + 'a' - 'A'
			}
			return '-'
		}, w), "-")
		for strings.Contains(part, "--") {
			part = strings.ReplaceAll(part, "--", "-")
		}
		switch {
		case part == "":
		case size+len(part)+1 > maxSlug:
			if len(parts) == 0 {
				parts = append(parts, strings.TrimRight(part[:maxSlug], "-"))
			}
			last = true
		default:
			parts, size = append(parts, part), size+len(part)+1
		}
		if last {
			break
		}
	}
	if len(parts) == 0 {
		return fmt.Sprintf("line-%d", line)
	}
	return strings.Join(parts, "-")
}
