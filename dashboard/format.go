package dashboard

import (
	"fmt"
	"html/template"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/internal/jsontext"
)

// funcs are the template functions, bound to h (prefix, time zone).
func (h *handler) funcs() template.FuncMap {
	return template.FuncMap{
		"url": h.url,
		// heartbeat is the live stream's, for the page's watchdog (app.js).
		"heartbeat": func() int64 { return heartbeat.Milliseconds() },
		"asset":     assetURL(h.prefix),
		"ago":       func(t time.Time) string { return ago(t, time.Now()) },
		"abs":       func(t time.Time) string { return absTime(t, h.loc) },
		"iso": func(t time.Time) string {
			if t.IsZero() {
				return ""
			}
			return t.UTC().Format(time.RFC3339)
		},
		"dur":    dur,
		"pretty": pretty,
		"trunc":  trunc,
		"num":    num,
		"state":  func(s hopper.State) string { return s.String() },
		"rate":   rate,
		"age": func(t time.Time) string {
			if t.IsZero() {
				return "—"
			}
			return short(max(time.Since(t), 0))
		},
		"add":        func(a, b int) int { return a + b },
		"sub":        func(a, b int) int { return a - b },
		"statusText": http.StatusText,
		"plural":     plural,
	}
}

// plural returns one if n is 1, else many.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// ago says how far t is from now, in words: "3m ago", "in 2h", "just
// now"; "—" for the zero time.
func ago(t, now time.Time) string {
	if t.IsZero() {
		return "—"
	}
	d := now.Sub(t)
	future := d < 0
	if future {
		d = -d
	}
	if d < time.Second {
		return "just now"
	}
	s := short(d)
	if future {
		return "in " + s
	}
	return s + " ago"
}

// short writes d in its largest unit or two: "45s", "3m 20s", "2h 5m",
// "3d 4h".
func short(d time.Duration) string {
	switch {
	case d < time.Minute:
		return strconv.Itoa(int(d/time.Second)) + "s"
	case d < time.Hour:
		m, s := int(d/time.Minute), int(d%time.Minute/time.Second)
		if s == 0 || m >= 10 {
			return strconv.Itoa(m) + "m"
		}
		return fmt.Sprintf("%dm %ds", m, s)
	case d < 48*time.Hour:
		hr, m := int(d/time.Hour), int(d%time.Hour/time.Minute)
		if m == 0 || hr >= 10 {
			return strconv.Itoa(hr) + "h"
		}
		return fmt.Sprintf("%dh %dm", hr, m)
	default:
		days, hr := int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour)
		if hr == 0 || days >= 10 {
			return strconv.Itoa(days) + "d"
		}
		return fmt.Sprintf("%dd %dh", days, hr)
	}
}

// absTime writes t in loc with its zone: "2026-11-23 14:05:09 CET".
func absTime(t time.Time, loc *time.Location) string {
	if t.IsZero() {
		return "—"
	}
	return t.In(loc).Format("2006-01-02 15:04:05 MST")
}

// dur writes a duration of work: "850µs", "12ms", "1.25s", "3m 20s".
func dur(d time.Duration) string {
	switch {
	case d <= 0:
		return "—"
	case d < time.Millisecond:
		return strconv.Itoa(int(d/time.Microsecond)) + "µs"
	case d < time.Second:
		return strconv.Itoa(int(d/time.Millisecond)) + "ms"
	case d < time.Minute:
		return strconv.FormatFloat(d.Seconds(), 'f', 2, 64) + "s"
	}
	return short(d)
}

// pretty indents JSON for reading, with <, > and & as themselves (the
// template escapes them for HTML), as jobs get shows them; text that is
// not JSON is returned as it is.
func pretty(b []byte) string {
	out, _ := jsontext.Indent(b, "", "  ")
	return out
}

// trunc cuts s to at most n characters, marking the cut.
func trunc(n int, s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 && i < n {
		s = s[:i] + " …"
	}
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}

// num writes n with thousands separators: 1,234,567.
func num(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// rate writes jobs per second: "0", "0.35", "12.5", "1,250".
func rate(r float64) string {
	switch {
	case r <= 0 || math.IsNaN(r):
		return "0"
	case r < 1:
		return strconv.FormatFloat(r, 'f', 2, 64)
	case r < 100:
		return strconv.FormatFloat(r, 'f', 1, 64)
	}
	return num(int(math.Round(r)))
}
