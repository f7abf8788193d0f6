package jsondur

import (
	"encoding/json"
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
		{`1500000000`, 1500 * time.Millisecond, `"1.5s"`},
	} {
		var d Duration
		if err := json.Unmarshal([]byte(tc.in), &d); err != nil || time.Duration(d) != tc.want {
			t.Errorf("Unmarshal(%s) = %v, %v; want %v", tc.in, time.Duration(d), err, tc.want)
		}
		if b, _ := json.Marshal(d); string(b) != tc.out {
			t.Errorf("Marshal(%v) = %s, want %s", time.Duration(d), b, tc.out)
		}
	}
	for _, bad := range []string{`"soon"`, `true`, `1.5`} {
		var d Duration
		if err := json.Unmarshal([]byte(bad), &d); err == nil {
			t.Errorf("Unmarshal(%s): want an error", bad)
		}
	}
}
