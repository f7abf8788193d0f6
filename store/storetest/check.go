package storetest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/hopperq/hopper/job"
)

func wantTime(t *testing.T, what string, got, want time.Time) {
	t.Helper()
	if !got.Equal(want) {
		t.Errorf("%s: got %v, want %v", what, got, want)
	}
}

func wantIDList(t *testing.T, what string, got, want []job.ID) {
	t.Helper()
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !slices.Equal(got, want) {
		t.Errorf("%s: got IDs %v, want %v", what, got, want)
	}
}

// jsonEqual reports whether a and b are the same JSON value (a store may
// re-encode JSON, e.g. PostgreSQL's jsonb).
func jsonEqual(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// wantAttempts compares attempt histories, times with Equal.
func wantAttempts(t *testing.T, what string, got, want []job.Attempt) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: got %d attempts %s, want %d %s", what, len(got), fmtAttempts(got), len(want), fmtAttempts(want))
		return
	}
	for i := range want {
		g, w := got[i], want[i]
		if !g.StartedAt.Equal(w.StartedAt) {
			t.Errorf("%s: attempt %d StartedAt: got %v, want %v", what, i, g.StartedAt, w.StartedAt)
		}
		if !jsonEqual(g.Result, w.Result) {
			t.Errorf("%s: attempt %d Result: got %s, want %s", what, i, g.Result, w.Result)
		}
		g.StartedAt, w.StartedAt = time.Time{}, time.Time{}
		g.Result, w.Result = nil, nil
		if !reflect.DeepEqual(g, w) {
			t.Errorf("%s: attempt %d: got %+v, want %+v", what, i, g, w)
		}
	}
}

func fmtAttempts(as []job.Attempt) string {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, a := range as {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "#%d %s", a.Attempt, a.Outcome)
	}
	b.WriteByte(']')
	return b.String()
}
