package httpapi

import (
	"net/http"

	"github.com/hopperq/hopper"
)

// The W3C trace-context headers (https://www.w3.org/TR/trace-context/)
// and the metadata keys that carry them with a job, the ones
// contrib/otelhopper reads.
const (
	headerTraceparent = "traceparent"
	headerTracestate  = "tracestate"
	maxTracestate     = 512 // the spec's bound for a whole tracestate
)

// traceContext copies a request's W3C trace context into the metadata
// of the job it enqueues, unless the job's metadata gives one: the
// worker that runs the job continues the trace of the code that sent the
// request, in whatever process (decision 62). A traceparent that is not
// well formed is ignored, as the spec says, and so is its tracestate.
func traceContext(r *http.Request, o *hopper.EnqueueOptions) {
	tp := r.Header.Get(headerTraceparent)
	if o == nil || !validTraceparent(tp) {
		return
	}
	if _, given := o.Meta[headerTraceparent]; given {
		return
	}
	if o.Meta == nil {
		o.Meta = make(map[string]string, 2)
	}
	o.Meta[headerTraceparent] = tp
	if ts := r.Header.Get(headerTracestate); ts != "" && len(ts) <= maxTracestate {
		o.Meta[headerTracestate] = ts
	}
}

// validTraceparent reports whether tp is a version-00 traceparent:
// 00-<32 hex, not all zero>-<16 hex, not all zero>-<2 hex>.
func validTraceparent(tp string) bool {
	if len(tp) != 55 || tp[0:3] != "00-" || tp[35] != '-' || tp[52] != '-' {
		return false
	}
	return lowerHex(tp[3:35]) && lowerHex(tp[36:52]) && lowerHex(tp[53:55]) &&
		tp[3:35] != "00000000000000000000000000000000" && tp[36:52] != "0000000000000000"
}

func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
