package schedule

import "time"

// Civil ("wall-clock") time is handled as civil seconds: the number of
// seconds from 1970-01-01 00:00:00 to the wall-clock time, counted as if
// every day had 86400 seconds (that is, the wall-clock time read as UTC).
// Civil seconds order wall-clock times exactly like the calendar does.

const secondsPerDay = 86400

// wall is a broken-down wall-clock time.
type wall struct {
	year                             int64
	month, day, hour, minute, second int
}

// floorDiv returns a/b rounded towards negative infinity (b > 0).
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b < 0 {
		q--
	}
	return q
}

// daysFromCivil returns the days from 1970-01-01 to the proleptic Gregorian
// date y-m-d (H. Hinnant's algorithm).
func daysFromCivil(y int64, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := floorDiv(y, 400)
	yoe := y - era*400
	mp := int64((m + 9) % 12)
	doy := (153*mp+2)/5 + int64(d) - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// civilFromDays is the inverse of daysFromCivil.
func civilFromDays(z int64) (y int64, m, d int) {
	z += 719468
	era := floorDiv(z, 146097)
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = int(doy - (153*mp+2)/5 + 1)
	if mp < 10 {
		m = int(mp + 3)
	} else {
		m = int(mp - 9)
	}
	y = yoe + era*400
	if m <= 2 {
		y++
	}
	return y, m, d
}

// wallOf breaks civil seconds u down into a wall-clock time.
func wallOf(u int64) wall {
	days := floorDiv(u, secondsPerDay)
	s := int(u - days*secondsPerDay)
	y, m, d := civilFromDays(days)
	return wall{year: y, month: m, day: d, hour: s / 3600, minute: s / 60 % 60, second: s % 60}
}

// civil returns the civil seconds of w.
func (w wall) civil() int64 {
	return daysFromCivil(w.year, w.month, w.day)*secondsPerDay +
		int64(w.hour*3600+w.minute*60+w.second)
}

// weekday returns the day of the week (0 = Sunday) of a day count from
// daysFromCivil.
func weekday(days int64) int {
	return int(days - floorDiv(days+4, 7)*7 + 4) // 1970-01-01 was a Thursday
}

// daysIn returns the number of days of month m in year y.
func daysIn(y int64, m int) int {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// zoneWindow bounds the distance between an instant and its wall-clock time
// (real offsets, even historical local mean times, stay below 16 hours).
const zoneWindow = 26 * 3600

// resolve returns the Unix second at which civil second u fires in loc: the
// first instant whose wall clock reads u, or, if the wall clock skips u (a
// spring-forward gap), the instant the gap ends.
func resolve(loc *time.Location, u int64) int64 {
	if loc == time.UTC {
		return u
	}
	// Walk the zone periods (spans of constant offset) that can contain an
	// instant for u, in order; the first one that does, wins.
	x := time.Unix(u-zoneWindow, 0).In(loc)
	var prevOff int64
	for i := 0; i < 16; i++ {
		_, o := x.Zone()
		off := int64(o)
		start, end := x.ZoneBounds()
		if i > 0 && off > prevOff {
			// x's period starts with a jump forward from prevOff to off: the
			// wall clock skips [start+prevOff, start+off).
			if s := start.Unix(); s+prevOff <= u && u < s+off {
				return s
			}
		}
		inst := u - off
		if (start.IsZero() || inst >= start.Unix()) && (end.IsZero() || inst < end.Unix()) {
			return inst
		}
		if end.IsZero() || end.Unix() > u+zoneWindow {
			break
		}
		prevOff, x = off, end
	}
	// Not reached for real zones; fall back to the offset in effect at u.
	_, o := time.Unix(u, 0).In(loc).Zone()
	return u - int64(o)
}

// repeatEnd reports whether instant t lies in the second pass of a repeated
// wall-clock interval (after a fall-back transition) and if so returns the
// civil second at which the repetition ends: the first wall-clock time after
// the transition that had not been shown before it.
func repeatEnd(loc *time.Location, t time.Time) (int64, bool) {
	tl := t.In(loc)
	start, _ := tl.ZoneBounds()
	if start.IsZero() {
		return 0, false
	}
	_, newOff := tl.Zone()
	_, oldOff := start.Add(-time.Second).Zone()
	if oldOff <= newOff {
		return 0, false
	}
	return start.Unix() + int64(oldOff), true
}
