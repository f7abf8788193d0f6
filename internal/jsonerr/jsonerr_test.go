package jsonerr

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

type dur int64

func (d *dur) UnmarshalJSON([]byte) error {
	return &json.UnmarshalTypeError{Value: `"5x" (want a duration such as "30s")`}
}

type line struct {
	Kind    string            `json:"kind"`
	N       int               `json:"n"`
	Ratio   float64           `json:"ratio"`
	On      bool              `json:"on"`
	Tags    []string          `json:"tags"`
	Headers map[string]string `json:"headers"`
	RunAt   time.Time         `json:"run_at"`
	Delay   *dur              `json:"delay"`
}

func TestDescribe(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ doc, want string }{
		{`{"kind": 5}`, `"kind": want a string, got number`},
		{`{"n": 1.5}`, `"n": want an integer, got number 1.5`},
		{`{"ratio": "x"}`, `"ratio": want a number, got string`},
		{`{"on": 1}`, `"on": want true or false, got number`},
		{`{"tags": {}}`, `"tags": want an array, got object`},
		{`{"headers": {"a": 1}}`, `"headers": want a string, got number`},
		{`[1]`, `want an object, got array`},
		{`{"delay": "5x"}`, `"delay": "5x" (want a duration such as "30s")`},
		{`{"run_at": "tomorrow"}`, `want a time such as 2026-01-02T15:04:05Z (RFC 3339), got "tomorrow"`},
		{`{"bogus": 1}`, `unknown field "bogus"`},
		{`{"kind":`, `not valid JSON: it ends before its value is complete`},
		{`{x}`, `not valid JSON at byte 2: invalid character 'x' looking for beginning of object key string`},
	} {
		var l line
		dec := json.NewDecoder(bytes.NewReader([]byte(tc.doc)))
		dec.DisallowUnknownFields()
		err := dec.Decode(&l)
		if err == nil {
			t.Fatalf("%s: decoded", tc.doc)
		}
		if got := Describe(err); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.doc, got, tc.want)
		}
	}
}
