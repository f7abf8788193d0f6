package dashboard

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// formZone is the zone the reschedule form shows a run time in and reads
// the one it is sent in, with its name. It is loc when loc has an IANA
// name ("Europe/Berlin", "UTC"); otherwise — time.Local, whose name Go
// does not know, or an unnamed fixed zone — it is the fixed offset loc
// has at t, named by it ("UTC+01:00"). The name is never "Local": each
// server's own, which the person at the browser cannot know.
func formZone(loc *time.Location, t time.Time) (string, *time.Location) {
	if name := loc.String(); name != "" && name != "Local" {
		return name, loc
	}
	_, off := t.In(loc).Zone()
	name := offsetName(off)
	return name, time.FixedZone(name, off)
}

// offsetName names a fixed offset east of UTC: "UTC", "UTC+01:00",
// "UTC-05:30".
func offsetName(off int) string {
	if off == 0 {
		return "UTC"
	}
	sign := '+'
	if off < 0 {
		sign, off = '-', -off
	}
	return fmt.Sprintf("UTC%c%02d:%02d", sign, off/3600, off/60%60)
}

// errZone is a zone a form named that is neither an IANA name nor a UTC
// offset.
var errZone = errors.New(`want an IANA time zone such as "Europe/Berlin" or an offset such as "UTC+01:00"`)

// parseZone reads the zone a form named: an IANA name, or a UTC offset as
// offsetName writes it.
func parseZone(s string) (*time.Location, error) {
	if s == "UTC" {
		return time.UTC, nil
	}
	if rest, ok := strings.CutPrefix(s, "UTC"); ok && len(rest) == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':' {
		h, err1 := strconv.Atoi(rest[1:3])
		m, err2 := strconv.Atoi(rest[4:6])
		if err1 != nil || err2 != nil || h > 14 || m > 59 {
			return nil, errZone
		}
		off := h*3600 + m*60
		if rest[0] == '-' {
			off = -off
		}
		return time.FixedZone(s, off), nil
	}
	if s == "" || s == "Local" { // LoadLocation would read them as UTC and as the server's zone
		return nil, errZone
	}
	loc, err := time.LoadLocation(s)
	if err != nil {
		return nil, errZone
	}
	return loc, nil
}
