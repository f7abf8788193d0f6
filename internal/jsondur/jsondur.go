// Package jsondur is Hopper's one duration in JSON: every document Hopper
// reads or writes — a job request or a retry policy sent to the HTTP API or
// in an enqueue --bulk line, the args of the exec and http kinds
// (kinds.Duration is this type), what the hopper command prints and the API
// serves — writes a duration as a Go duration string such as "1m30s", and
// reads that string or a JSON number, which is always a number of seconds
// (1.5 is 1.5s). See docs/decisions.md, "One home for the outside's
// documents".
package jsondur

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"time"
)

// Duration is a time.Duration in JSON: written as a Go duration string,
// read from one or from a number of seconds. A JSON null leaves it
// unchanged; an empty string, a duration that does not parse and a number
// outside time.Duration's range (about ±292 years) are refused with a
// *json.UnmarshalTypeError, to which encoding/json adds the field's name.
type Duration time.Duration

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// String returns the duration as time.Duration formats it.
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalJSON implements json.Marshaler.
func (d Duration) MarshalJSON() ([]byte, error) {
	return strconv.AppendQuote(nil, time.Duration(d).String()), nil
}

// UnmarshalJSON implements json.Unmarshaler.
func (d *Duration) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	v, err := Parse(b)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// Parse reads b, one JSON value, as UnmarshalJSON does (null is refused).
func Parse(b []byte) (time.Duration, error) {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return 0, bad(string(b))
		}
		return ParseString(s)
	}
	var secs float64
	if err := json.Unmarshal(b, &secs); err != nil {
		return 0, bad(string(b))
	}
	ns := secs * float64(time.Second)
	if math.IsNaN(ns) || ns >= math.MaxInt64 || ns <= math.MinInt64 {
		return 0, bad(string(b) + " seconds, beyond the range of a duration")
	}
	return time.Duration(ns), nil
}

// ParseString reads a Go duration string such as "30s" or "1h30m" (as
// time.ParseDuration), refusing an empty one; its error is Parse's.
func ParseString(s string) (time.Duration, error) {
	v, err := time.ParseDuration(s)
	if err != nil {
		return 0, bad(strconv.Quote(s))
	}
	return v, nil
}

// Want says what a duration is written as, for messages.
const Want = `a Go duration such as "30s" or "1h30m", or a number of seconds`

// bad is the error of a value that is not a duration: a
// *json.UnmarshalTypeError, whose Value says what was wanted (see
// jsonerr.Explain).
func bad(value string) error {
	return &json.UnmarshalTypeError{Value: fmt.Sprintf("%s (want %s)", value, Want), Type: reflect.TypeFor[Duration]()}
}
