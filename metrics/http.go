package metrics

import (
	"slices"

	"github.com/hopperq/hopper/httpauth"
	"github.com/prometheus/client_golang/prometheus"
)

// authReasons are the reasons AuthFailure counts under their own label.
var authReasons = httpauth.Reasons()

// newAuthFailures returns the counter of AuthFailure, with every reason
// at zero from the start (so that rate() sees the first failure).
func newAuthFailures() *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hopper_http_auth_failures_total",
		Help: "HTTP requests refused for who or where they came from, by reason: no_token, bad_token, bad_session (401), scope (403), throttled (429), host (421).",
	}, []string{"reason"})
	for _, r := range authReasons {
		c.WithLabelValues(r)
	}
	return c
}

// AuthFailure counts a request the HTTP server refused, by the reason
// httpauth gives (one of httpauth.Reasons; another is counted as
// "other"). It is httpauth.Auth.OnFailure and HostOptions.OnFailure; it
// is fast and never blocks.
func (m *Metrics) AuthFailure(reason string) {
	if !slices.Contains(authReasons, reason) {
		reason = "other"
	}
	m.authFailures.WithLabelValues(reason).Inc()
}
