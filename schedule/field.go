package schedule

import (
	"fmt"
	"strconv"
	"strings"
)

// bounds describes one cron field: its name, its value range and the names
// it accepts.
type bounds struct {
	name     string
	min, max int
	names    map[string]int
	hint     string
}

var (
	secondBounds = bounds{name: "second", min: 0, max: 59}
	minuteBounds = bounds{name: "minute", min: 0, max: 59}
	hourBounds   = bounds{name: "hour", min: 0, max: 23}
	domBounds    = bounds{name: "day-of-month", min: 1, max: 31}
	monthBounds  = bounds{name: "month", min: 1, max: 12, hint: " (want 1-12 or JAN-DEC)", names: map[string]int{
		"JAN": 1, "FEB": 2, "MAR": 3, "APR": 4, "MAY": 5, "JUN": 6,
		"JUL": 7, "AUG": 8, "SEP": 9, "OCT": 10, "NOV": 11, "DEC": 12,
	}}
	dowBounds = bounds{name: "day-of-week", min: 0, max: 7, hint: " (want 0-7 or SUN-SAT)", names: map[string]int{
		"SUN": 0, "MON": 1, "TUE": 2, "WED": 3, "THU": 4, "FRI": 5, "SAT": 6,
	}}
)

// parseField parses the text of one field into a bit set with bit v set for
// every value v the field matches. On failure it returns a non-empty reason.
func parseField(text string, b bounds) (uint64, string) {
	var mask uint64
	for item := range strings.SplitSeq(text, ",") {
		m, reason := parseItem(item, b)
		if reason != "" {
			return 0, reason
		}
		mask |= m
	}
	return mask, ""
}

// parseItem parses one list item: "*", "v", "a-b", optionally with "/n".
func parseItem(item string, b bounds) (uint64, string) {
	if item == "" {
		return 0, "empty list element"
	}
	rng, stepText, hasStep := strings.Cut(item, "/")
	var lo, hi int
	switch {
	case rng == "*":
		lo, hi = b.min, b.max
	case strings.Contains(rng, "-"):
		a, z, _ := strings.Cut(rng, "-")
		if a == "" || z == "" || strings.Contains(z, "-") {
			return 0, fmt.Sprintf("invalid range %q (want a-b)", rng)
		}
		var reason string
		if lo, reason = parseValue(a, b); reason != "" {
			return 0, reason
		}
		if hi, reason = parseValue(z, b); reason != "" {
			return 0, reason
		}
		if lo > hi {
			return 0, fmt.Sprintf("range %s is reversed (start %d > end %d)", rng, lo, hi)
		}
	default:
		var reason string
		if lo, reason = parseValue(rng, b); reason != "" {
			return 0, reason
		}
		hi = lo
		if hasStep {
			hi = b.max
		}
	}
	step := 1
	if hasStep {
		n, err := strconv.Atoi(stepText)
		switch {
		case !isDigits(stepText):
			return 0, fmt.Sprintf("invalid step %q (want a number)", stepText)
		case err != nil || n < 1 || n > b.max:
			return 0, fmt.Sprintf("step %s out of range 1-%d", stepText, b.max)
		}
		step = n
	}
	var mask uint64
	for v := lo; v <= hi; v += step {
		mask |= 1 << uint(v)
	}
	return mask, ""
}

// parseValue parses a number or a name within b.
func parseValue(text string, b bounds) (int, string) {
	if isDigits(text) {
		n, err := strconv.Atoi(text)
		if err != nil || n < b.min || n > b.max {
			return 0, fmt.Sprintf("value %s out of range %d-%d", text, b.min, b.max)
		}
		return n, ""
	}
	if n, ok := b.names[strings.ToUpper(text)]; ok {
		return n, ""
	}
	return 0, fmt.Sprintf("invalid value %q%s", text, b.hint)
}

// isDigits reports whether s is a non-empty string of ASCII digits.
func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
