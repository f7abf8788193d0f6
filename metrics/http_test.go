package metrics

import (
	"testing"

	"github.com/hopperq/hopper/httpauth"
)

// TestAuthFailures: every reason is exported from the start, counts what
// AuthFailure is told, and an unknown reason goes to "other" rather than
// growing the label set.
func TestAuthFailures(t *testing.T) {
	t.Parallel()
	m := New(Options{})
	before := scrape(t, m)
	for _, r := range httpauth.Reasons() {
		if v, ok := before[`hopper_http_auth_failures_total{reason="`+r+`"}`]; !ok || v != 0 {
			t.Errorf("reason %s before any failure: %v, %v", r, v, ok)
		}
	}
	m.AuthFailure(httpauth.ReasonBadToken)
	m.AuthFailure(httpauth.ReasonBadToken)
	m.AuthFailure(httpauth.ReasonHost)
	m.AuthFailure("whatever an attacker sends")
	after := scrape(t, m)
	for series, want := range map[string]float64{
		`hopper_http_auth_failures_total{reason="bad_token"}`: 2,
		`hopper_http_auth_failures_total{reason="host"}`:      1,
		`hopper_http_auth_failures_total{reason="other"}`:     1,
		`hopper_http_auth_failures_total{reason="scope"}`:     0,
	} {
		if after[series] != want {
			t.Errorf("%s = %v, want %v", series, after[series], want)
		}
	}
}
