// Package schedule computes the fire times of recurring schedules: cron
// expressions, cron macros and fixed-rate intervals. It is pure (no clocks,
// no goroutines, no I/O apart from loading a named time zone) and uses only
// the Go standard library.
//
// # Syntax
//
// [Parse] accepts:
//
//   - cron with 5 fields: minute hour day-of-month month day-of-week
//     (the second is always 0);
//   - cron with 6 fields: second minute hour day-of-month month day-of-week;
//   - the macros @yearly (= @annually, "0 0 1 1 *"), @monthly ("0 0 1 * *"),
//     @weekly ("0 0 * * 0"), @daily (= @midnight, "0 0 * * *") and
//     @hourly ("0 * * * *");
//   - "@every <duration>", a fixed-rate interval in [time.ParseDuration]
//     syntax of at least one second, anchored at the Unix epoch so that its
//     fire times do not depend on when it was parsed (see [Every]).
//
// Fields are separated by white space. A field is a comma-separated list of
// items; an item is "*", a value, a range "a-b", or any of those followed by
// a step "/n" ("*/n", "a-b/n", and "a/n", which means a up to the field's
// maximum, every n). Ranges must not be reversed and steps must be between 1
// and the field's maximum. Allowed values:
//
//	second        0-59
//	minute        0-59
//	hour          0-23
//	day-of-month  1-31
//	month         1-12 or JAN-DEC
//	day-of-week   0-7 or SUN-SAT (0 and 7 are both Sunday)
//
// Names are case-insensitive. A day-of-month that a month does not have
// (31 in April, 30 in February, 29 in February of a common year) simply does
// not match that month. As in Vixie cron, when both day-of-month and
// day-of-week are restricted — that is, neither field starts with "*" — a
// day matches if EITHER field matches ("0 0 1 * MON" fires on the 1st and on
// every Monday); otherwise both must match ("0 0 */2 * MON" fires on Mondays
// that fall on an odd day of the month).
//
// A spec may start with "CRON_TZ=Area/City " or "TZ=Area/City ", which
// overrides the location passed to Parse. [Rule.String] returns the spec
// normalised: single spaces between fields, names in upper case, macros in
// their canonical lower-case spelling, durations as printed by
// [time.Duration.String], and a time-zone prefix spelled "CRON_TZ=". A
// location passed to Parse, rather than given as a prefix, is not part of
// the string: parse it again with the same location.
//
// # Daylight saving time
//
// Cron rules are evaluated on the wall clock of their location, and each
// rule denotes a set of wall-clock times (the ones its fields match). The
// rule fires according to one principle: each distinct matched wall-clock
// time fires at most once, at its first occurrence, and a matched wall-clock
// time that does not exist fires once at the instant the gap ends. So:
//
//   - Spring forward (a gap, such as 02:00-03:00 on 2026-03-29 in
//     Europe/Berlin): "30 2 * * *" fires that day at 03:00 local time, the
//     first instant after the gap, instead of skipping the day. All matched
//     times inside the gap collapse into that one firing: "*/15 2 * * *"
//     fires once at 03:00, not four times, and "0,30 2,3 * * *" fires at
//     03:00 (for 02:00, 02:30 and 03:00) and 03:30.
//   - Fall back (a repeated hour, such as 02:00-03:00 on 2026-10-25 in
//     Europe/Berlin, first in CEST and then in CET): "30 2 * * *" fires once,
//     at 02:30 CEST. A rule that matches every hour, such as "*/15 * * * *"
//     or @hourly, fires at the matched times of the first pass and then
//     stays silent during the second pass, whose wall-clock times have all
//     fired already; it resumes at 03:00 CET.
//
// Next is strictly increasing: Next(t) is always after t, and t1 < t2
// implies Next(t1) <= Next(t2). Fixed-rate rules ("@every", [Every]) are
// pure durations and are not affected by daylight saving time at all.
//
// # Complexity
//
// Fields are bit sets. Next walks the calendar field by field (year, month,
// day, hour, minute, second), jumping straight to the next matching value
// of each field, so it costs a handful of bit operations per month it has to
// skip plus a few time-zone look-ups; it never iterates over seconds or
// minutes. A cron rule searches at most eight years ahead of t (enough to
// reach the next February 29 across the common year 2100) and returns the
// zero Time when nothing matches within that horizon (for example
// "0 0 30 2 *", which can never fire). Fixed-rate rules cost O(1).
// Rules are immutable and safe for concurrent use.
package schedule
