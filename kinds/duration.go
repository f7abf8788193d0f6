package kinds

import (
	"encoding/json"
	"fmt"
	"reflect"
	"time"
)

// Duration is a time.Duration that encodes in JSON as a Go duration string
// such as "30s" or "1m30s". When decoding it also accepts a JSON number,
// read as seconds (so 1.5 is 1.5s).
type Duration time.Duration

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// String returns the duration as time.Duration formats it.
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalJSON implements json.Marshaler.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON implements json.Unmarshaler.
func (d *Duration) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		if s == "" {
			*d = 0
			return nil
		}
		v, err := time.ParseDuration(s)
		if err != nil {
			return badDuration(fmt.Sprintf("%q (want a Go duration such as \"30s\" or \"1m30s\")", s))
		}
		*d = Duration(v)
		return nil
	}
	var secs float64
	if err := json.Unmarshal(b, &secs); err != nil {
		return badDuration(fmt.Sprintf("%s (want a string such as \"30s\" or a number of seconds)", b))
	}
	*d = Duration(secs * float64(time.Second))
	return nil
}

// badDuration is the error of a value that is not a duration: a
// *json.UnmarshalTypeError, to which the decoder adds the field's name.
func badDuration(value string) error {
	return &json.UnmarshalTypeError{Value: value, Type: reflect.TypeFor[Duration]()}
}
