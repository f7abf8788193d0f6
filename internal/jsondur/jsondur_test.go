package jsondur

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want time.Duration
		out  string
	}{
		{`"1m30s"`, 90 * time.Second, `"1m30s"`},
		{`"0s"`, 0, `"0s"`},
		{`1.5`, 1500 * time.Millisecond, `"1.5s"`},
		{`30`, 30 * time.Second, `"30s"`},
		{`0`, 0, `"0s"`},
	} {
		var d Duration
		if err := json.Unmarshal([]byte(tc.in), &d); err != nil || time.Duration(d) != tc.want {
			t.Errorf("Unmarshal(%s) = %v, %v; want %v", tc.in, time.Duration(d), err, tc.want)
		}
		if b, _ := json.Marshal(d); string(b) != tc.out {
			t.Errorf("Marshal(%v) = %s, want %s", time.Duration(d), b, tc.out)
		}
	}
}

// A bare number is seconds everywhere; one beyond the range (a Go
// program's time.Duration in nanoseconds, say) is refused, not wrapped.
func TestRefused(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{`"soon"`, `""`, `true`, `[]`, `30000000000`, `-1e300`} {
		var v struct {
			D Duration `json:"d"`
		}
		err := json.Unmarshal([]byte(`{"d":`+bad+`}`), &v)
		var te *json.UnmarshalTypeError
		if err == nil || !strings.Contains(err.Error(), "seconds") {
			t.Errorf("Unmarshal(%s) = %v: want an error saying what a duration is", bad, err)
		} else if !errorsAs(err, &te) || te.Field != "d" {
			t.Errorf("Unmarshal(%s) = %#v: want a *json.UnmarshalTypeError naming d", bad, err)
		}
	}
}

func errorsAs(err error, te **json.UnmarshalTypeError) bool {
	t, ok := err.(*json.UnmarshalTypeError)
	*te = t
	return ok
}
