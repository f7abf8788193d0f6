package schedule

import (
	"math/bits"
	"strings"
	"time"
)

// searchYears is how many years past t a cron rule looks for a match. Eight
// covers the longest gap between two February 29ths (2096 to 2104).
const searchYears = 8

// maxUnix bounds the instants Next accepts, far inside the range where the
// civil arithmetic cannot overflow (about ±36 billion years).
const maxUnix = 1 << 60

// cronRule is a parsed cron expression. Bit v of a field's mask is set if
// the field matches value v.
type cronRule struct {
	spec                        string
	loc                         *time.Location
	second, minute, hour, month uint64
	dom                         uint64 // bits 1-31
	dow                         uint64 // bits 0-6, 0 = Sunday
	domOrDow                    bool   // both day fields restricted: a day matches if either does
	// dowByFirst[w] has bit d set if day d of a month whose 1st is weekday
	// w falls on a weekday in dow.
	dowByFirst [7]uint64
}

// newCron builds a rule from six field texts (second minute hour
// day-of-month month day-of-week).
func newCron(f [6]string, spec string, loc *time.Location) (*cronRule, *ParseError) {
	all := [6]bounds{secondBounds, minuteBounds, hourBounds, domBounds, monthBounds, dowBounds}
	var masks [6]uint64
	for i, b := range all {
		m, reason := parseField(f[i], b)
		if reason != "" {
			return nil, &ParseError{Field: b.name, Value: f[i], Reason: reason}
		}
		masks[i] = m
	}
	c := &cronRule{
		spec: spec, loc: loc,
		second: masks[0], minute: masks[1], hour: masks[2], dom: masks[3], month: masks[4],
		domOrDow: !strings.HasPrefix(f[3], "*") && !strings.HasPrefix(f[5], "*"),
	}
	c.dow = masks[5]
	if c.dow&(1<<7) != 0 { // 7 is Sunday
		c.dow = c.dow&^(1<<7) | 1
	}
	for first := range 7 {
		for d := 1; d <= 31; d++ {
			if c.dow&(1<<uint((first+d-1)%7)) != 0 {
				c.dowByFirst[first] |= 1 << uint(d)
			}
		}
	}
	return c, nil
}

// String returns the normalised spec.
func (c *cronRule) String() string { return c.spec }

// Next returns the first fire time strictly after t, in the rule's
// location, or the zero Time if there is none within eight years. See the
// package documentation for how daylight-saving transitions are handled.
//
// A matched wall-clock time w fires at resolve(w), and resolve is
// non-decreasing in w, so the answer is resolve of the first matched w
// after t's own wall clock whose instant is after t. Only in the second
// pass of a repeated hour can a later w resolve to an instant before t; the
// loop then skips to the end of the repetition.
func (c *cronRule) Next(t time.Time) time.Time {
	tu := t.Unix() // floor: t < tu+1
	if tu > maxUnix || tu < -maxUnix {
		return time.Time{}
	}
	_, off := t.In(c.loc).Zone()
	from := tu + int64(off) + 1 // civil second after t's wall clock
	limit := wallOf(from).year + searchYears
	for {
		w, ok := c.match(wallOf(from), limit)
		if !ok {
			return time.Time{}
		}
		u := w.civil()
		if inst := resolve(c.loc, u); inst > tu {
			return time.Unix(inst, 0).In(c.loc)
		}
		// w was first shown before t: t is in the second pass of a
		// repeated (fall-back) interval, whose wall-clock times have all
		// fired already. Continue where the repetition ends.
		from = u + 1
		if end, ok := repeatEnd(c.loc, t); ok && end > from {
			from = end
		}
	}
}

// nextBit returns the lowest set bit of mask that is >= from, or -1.
func nextBit(mask uint64, from int) int {
	if from >= 64 {
		return -1
	}
	mask = mask >> uint(from) << uint(from)
	if mask == 0 {
		return -1
	}
	return bits.TrailingZeros64(mask)
}

// dayMask returns the days of month m of year y that the rule matches.
func (c *cronRule) dayMask(y int64, m int) uint64 {
	valid := uint64(1)<<uint(daysIn(y, m)+1) - 2 // bits 1..n
	dow := c.dowByFirst[weekday(daysFromCivil(y, m, 1))]
	if c.domOrDow {
		return (c.dom | dow) & valid
	}
	return c.dom & dow & valid
}

// match returns the first wall-clock time >= w that the rule matches, or
// false if there is none up to the end of year limit. It skips whole
// months, days, hours and minutes at a time.
func (c *cronRule) match(w wall, limit int64) (wall, bool) {
	for w.year <= limit {
		m := nextBit(c.month, w.month)
		if m < 0 {
			w = wall{year: w.year + 1, month: 1, day: 1}
			continue
		}
		if m != w.month {
			w = wall{year: w.year, month: m, day: 1}
		}
		d := nextBit(c.dayMask(w.year, w.month), w.day)
		if d < 0 {
			w = wall{year: w.year, month: w.month + 1, day: 1} // month 13 matches nothing
			continue
		}
		if d != w.day {
			w.day, w.hour, w.minute, w.second = d, 0, 0, 0
		}
		h := nextBit(c.hour, w.hour)
		if h < 0 {
			w.day, w.hour, w.minute, w.second = w.day+1, 0, 0, 0
			continue
		}
		if h != w.hour {
			w.hour, w.minute, w.second = h, 0, 0
		}
		mi := nextBit(c.minute, w.minute)
		if mi < 0 {
			w.hour, w.minute, w.second = w.hour+1, 0, 0
			continue
		}
		if mi != w.minute {
			w.minute, w.second = mi, 0
		}
		s := nextBit(c.second, w.second)
		if s < 0 {
			w.minute, w.second = w.minute+1, 0
			continue
		}
		w.second = s
		return w, true
	}
	return wall{}, false
}
