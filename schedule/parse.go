package schedule

import (
	"fmt"
	"strings"
	"time"
)

// Rule computes the fire times of a recurring schedule. Implementations
// returned by this package are immutable and safe for concurrent use.
type Rule interface {
	// Next returns the first fire time strictly after t. It returns the zero
	// Time if there is none (e.g. a cron rule like "0 0 30 2 *" that can
	// never match); cron rules search at most eight years ahead of t.
	// Next is monotonic: for t1 < t2, Next(t1) <= Next(t2) unless one of
	// them is zero.
	Next(t time.Time) time.Time
	// String returns the spec the rule was parsed from, normalised (e.g.
	// "*/5 * * * *", "@every 1m30s").
	String() string
}

// ParseError describes a spec that Parse rejected. Spec is the spec as
// given to Parse. Field names the part of the spec that is wrong ("second",
// "minute", "hour", "day-of-month", "month", "day-of-week", "duration" or
// "time zone") and Value is that part's text; both are empty when the spec
// as a whole is wrong (empty, wrong number of fields, unknown macro).
// Reason says what is wrong.
type ParseError struct {
	Spec   string
	Field  string
	Value  string
	Reason string
}

// Error returns a message naming the spec, the field and the reason, e.g.
// `schedule: parse "61 * * * *": minute field "61": value 61 out of range 0-59`.
func (e *ParseError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("schedule: parse %q: %s", e.Spec, e.Reason)
	}
	return fmt.Sprintf("schedule: parse %q: %s field %q: %s", e.Spec, e.Field, e.Value, e.Reason)
}

// macros maps each macro to its canonical spelling and its cron fields
// (second minute hour day-of-month month day-of-week).
var macros = map[string]struct {
	name   string
	fields [6]string
}{
	"@yearly":   {"@yearly", [6]string{"0", "0", "0", "1", "1", "*"}},
	"@annually": {"@yearly", [6]string{"0", "0", "0", "1", "1", "*"}},
	"@monthly":  {"@monthly", [6]string{"0", "0", "0", "1", "*", "*"}},
	"@weekly":   {"@weekly", [6]string{"0", "0", "0", "*", "*", "0"}},
	"@daily":    {"@daily", [6]string{"0", "0", "0", "*", "*", "*"}},
	"@midnight": {"@daily", [6]string{"0", "0", "0", "*", "*", "*"}},
	"@hourly":   {"@hourly", [6]string{"0", "0", "*", "*", "*", "*"}},
}

// Parse parses a spec in time zone loc (nil means UTC). Accepted specs:
//   - cron with 5 fields: minute hour day-of-month month day-of-week
//   - cron with 6 fields: second minute hour day-of-month month day-of-week
//   - macros: @yearly @annually @monthly @weekly @daily @midnight @hourly
//   - "@every <duration>" (time.ParseDuration syntax, must be >= 1s) — a
//     fixed-rate interval anchored at the Unix epoch (see Every)
//
// Field syntax: *, numbers, ranges a-b, steps */n and a-b/n and a/n, lists
// a,b,c, month names JAN-DEC, weekday names SUN-SAT, day-of-week 7 ==
// Sunday, case-insensitive names. Standard cron rule: when both day-of-month
// and day-of-week are restricted (neither starts with "*"), a day matches if
// EITHER matches (Vixie cron). An optional "CRON_TZ=Area/City " or
// "TZ=Area/City " prefix overrides loc. Fire times are returned in the
// rule's location. On failure Parse returns a *ParseError.
func Parse(spec string, loc *time.Location) (Rule, error) {
	if loc == nil {
		loc = time.UTC
	}
	fail := func(field, value, reason string) (Rule, error) {
		return nil, &ParseError{Spec: spec, Field: field, Value: value, Reason: reason}
	}
	fields := strings.Fields(spec)
	if len(fields) == 0 {
		return fail("", "", "empty spec")
	}
	prefix := ""
	if name, ok := tzName(fields[0]); ok {
		if name == "" || name == "Local" {
			return fail("time zone", name, "want an IANA name such as Europe/Berlin")
		}
		l, err := time.LoadLocation(name)
		if err != nil {
			return fail("time zone", name, err.Error())
		}
		loc, prefix, fields = l, "CRON_TZ="+name+" ", fields[1:]
		if len(fields) == 0 {
			return fail("", "", "no schedule after the time zone prefix")
		}
	}
	if strings.HasPrefix(fields[0], "@") {
		return parseMacro(spec, prefix, fields, loc)
	}
	if len(fields) != 5 && len(fields) != 6 {
		return fail("", "", fmt.Sprintf("expected 5 or 6 fields, found %d", len(fields)))
	}
	norm := prefix + strings.ToUpper(strings.Join(fields, " "))
	var six [6]string
	if len(fields) == 5 {
		six[0] = "0"
		copy(six[1:], fields)
	} else {
		copy(six[:], fields)
	}
	c, perr := newCron(six, norm, loc)
	if perr != nil {
		perr.Spec = spec
		return nil, perr
	}
	return c, nil
}

// SpecZone returns the zone a spec names with a "CRON_TZ=name " or
// "TZ=name " prefix, and the spec after it; ok is false without one.
func SpecZone(spec string) (zone, rest string, ok bool) {
	fields := strings.Fields(spec)
	if len(fields) == 0 {
		return "", spec, false
	}
	if zone, ok = tzName(fields[0]); !ok {
		return "", spec, false
	}
	return zone, strings.Join(fields[1:], " "), true
}

// tzName reports whether field is a "CRON_TZ=name" or "TZ=name" prefix and
// returns the name.
func tzName(field string) (string, bool) {
	if name, ok := strings.CutPrefix(field, "CRON_TZ="); ok {
		return name, true
	}
	return strings.CutPrefix(field, "TZ=")
}

// parseMacro parses fields, whose first element starts with "@".
func parseMacro(spec, prefix string, fields []string, loc *time.Location) (Rule, error) {
	fail := func(field, value, reason string) (Rule, error) {
		return nil, &ParseError{Spec: spec, Field: field, Value: value, Reason: reason}
	}
	name := strings.ToLower(fields[0])
	if name == "@every" {
		if len(fields) != 2 {
			return fail("", "", "@every takes exactly one duration, e.g. \"@every 1m30s\"")
		}
		d, err := time.ParseDuration(fields[1])
		if err != nil {
			return fail("duration", fields[1], "invalid duration (want time.ParseDuration syntax such as 1m30s)")
		}
		if err := CheckInterval(d); err != nil {
			return fail("duration", fields[1], err.Error())
		}
		return &everyRule{d: d, anchor: time.Unix(0, 0).In(loc), prefix: prefix}, nil
	}
	m, ok := macros[name]
	if !ok {
		return fail("", "", fmt.Sprintf("unknown macro %q (want @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly or @every)", fields[0]))
	}
	if len(fields) != 1 {
		return fail("", "", fmt.Sprintf("unexpected %q after %s", fields[1], fields[0]))
	}
	c, perr := newCron(m.fields, prefix+m.name, loc)
	if perr != nil { // unreachable: the macro table is valid
		perr.Spec = spec
		return nil, perr
	}
	return c, nil
}
