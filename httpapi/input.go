package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/backoff"
	"github.com/hopperq/hopper/internal/reqbody"
	"github.com/hopperq/hopper/job"
)

// errTrailing is a body holding more than one JSON value.
var errTrailing = errors.New("trailing data")

// readBody reads r's body (bounded by wrap) and refuses bytes that are not
// UTF-8: JSON decoding would replace them, and the job stored would differ
// from the one sent. A body over the limit or late is the error of its
// bound (too_large, timeout); one cut short is a 400 whose message names
// no address of the connection.
func readBody(r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		var mb *http.MaxBytesError
		var te *reqbody.TimeoutError
		switch {
		case errors.As(err, &mb), errors.As(err, &te):
			return nil, err
		case errors.Is(err, io.ErrUnexpectedEOF):
			return nil, invalid("body", "cannot read it: it ended before its Content-Length")
		}
		return nil, invalid("body", "cannot read it: the connection failed")
	}
	if !utf8.Valid(b) {
		return nil, invalid("body", "not valid UTF-8")
	}
	return b, nil
}

// decodeStrict decodes b, one JSON value, into v, refusing unknown fields.
// Errors name the field, after prefix.
func decodeStrict(b []byte, v any, prefix string) error {
	if len(bytes.TrimSpace(b)) == 0 {
		return invalid(whole(prefix), "empty: want a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(err, prefix)
	}
	if _, err := dec.Token(); err != io.EOF {
		return decodeError(errTrailing, prefix)
	}
	return nil
}

// decodeBody reads r's body and decodes it strictly into v.
func decodeBody(r *http.Request, v any) error {
	b, err := readBody(r)
	if err != nil {
		return err
	}
	return decodeStrict(b, v, "")
}

// noBody refuses a body on routes that take none, except an empty one or
// an empty object ({}).
func noBody(r *http.Request) error {
	b, err := readBody(r)
	if err != nil || len(bytes.TrimSpace(b)) == 0 {
		return err
	}
	return decodeStrict(b, &struct{}{}, "")
}

// checkQuery refuses query parameters the route does not take (a typo
// would otherwise be ignored: ?sate=dead listing every job), and empty
// ones.
func checkQuery(r *http.Request, allowed []string) error {
	if r.URL.RawQuery == "" {
		return nil
	}
	q, err := parseQuery(r)
	if err != nil {
		return err
	}
	for k, vs := range q {
		if !slices.Contains(allowed, k) {
			if len(allowed) == 0 {
				return invalid(k, "unknown query parameter: this route takes none")
			}
			return invalid(k, "unknown query parameter; this route takes "+strings.Join(allowed, ", "))
		}
		if slices.Contains(vs, "") {
			// ?cursor= from a client that pasted an absent next_cursor
			// would list the first page again, forever.
			return invalid(k, "empty: leave the parameter out instead")
		}
	}
	return nil
}

func parseQuery(r *http.Request) (map[string][]string, error) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, invalid("query", "malformed query string: "+err.Error())
	}
	return q, nil
}

// queryOne returns the single value of query parameter name ("" if
// absent); a parameter given twice is refused.
func queryOne(q map[string][]string, name string) (string, error) {
	vs := q[name]
	switch len(vs) {
	case 0:
		return "", nil
	case 1:
		if !utf8.ValidString(vs[0]) {
			return "", invalid(name, "not valid UTF-8")
		}
		return vs[0], nil
	}
	return "", invalid(name, "given more than once")
}

// parseID parses a job ID: a positive integer.
func parseID(field, s string) (hopper.ID, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n <= 0 {
		return 0, invalid(field, fmt.Sprintf("%q is not a job ID: want a positive integer", s))
	}
	return hopper.ID(n), nil
}

// checkIDs refuses an empty or oversized list of IDs, and IDs that are not
// positive.
func checkIDs(field string, ids []hopper.ID) error {
	if len(ids) > MaxBatch {
		return invalid(field, fmt.Sprintf("%d IDs, more than the limit of %d", len(ids), MaxBatch))
	}
	for i, id := range ids {
		if id <= 0 {
			return invalid(fmt.Sprintf("%s[%d]", field, i), fmt.Sprintf("%d is not a job ID: want a positive integer", id))
		}
	}
	return nil
}

// parseDuration parses a Go duration string for field.
func parseDuration(field, s string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, invalid(field, fmt.Sprintf("%q is not a duration: want a Go duration such as \"30s\", \"5m\" or \"1h30m\"", s))
	}
	return d, nil
}

// parseTime parses an RFC 3339 time for field, within the range stores
// keep (1970 to 2200).
func parseTime(field, s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(s))
	if err != nil {
		return time.Time{}, invalid(field, fmt.Sprintf("%q is not an RFC 3339 time such as \"2030-01-02T15:04:05Z\"", s))
	}
	if err := job.CheckTime(field, t); err != nil {
		return time.Time{}, err
	}
	return t, nil
}

// parseStates parses state filters: comma-separated names, possibly
// repeated; "waiting" and "finished" stand for their groups.
func parseStates(values []string) ([]hopper.State, error) {
	var out []hopper.State
	add := func(ss ...hopper.State) {
		for _, s := range ss {
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	for _, v := range values {
		for _, name := range strings.Split(v, ",") {
			switch n := strings.ToLower(strings.TrimSpace(name)); n {
			case "":
			case "waiting":
				add(job.WaitingStates...)
			case "finished":
				add(hopper.StateCompleted, hopper.StateCancelled, hopper.StateDead)
			default:
				s, err := job.ParseState(n)
				if err != nil {
					return nil, invalid("state", fmt.Sprintf("unknown state %q; want scheduled, available, running, retrying, completed, cancelled, dead, waiting or finished", name))
				}
				add(s)
			}
		}
	}
	return out, nil
}

// jobOptions are the options of a job in a request: enqueue's and a
// schedule's. Pointers tell a field given as zero or empty — refused,
// since the client would read it as "the default" — from one left out.
type jobOptions struct {
	Queue       *string         `json:"queue"`
	Priority    int             `json:"priority"`
	MaxAttempts *int            `json:"max_attempts"`
	Timeout     *string         `json:"timeout"`
	Retry       json.RawMessage `json:"retry"`
}

// retryJSON is a backoff.Policy as requests give it, durations as strings.
type retryJSON struct {
	Strategy string   `json:"strategy"`
	Base     *string  `json:"base"`
	Max      *string  `json:"max"`
	Factor   float64  `json:"factor"`
	Jitter   string   `json:"jitter"`
	Delays   []string `json:"delays"`
}

// options returns the EnqueueOptions o describes; fields are named after
// prefix.
func (o *jobOptions) options(prefix string) (*hopper.EnqueueOptions, error) {
	out := &hopper.EnqueueOptions{Priority: o.Priority}
	if o.Queue != nil {
		if strings.TrimSpace(*o.Queue) == "" {
			return nil, invalid(prefix+"queue", `must not be empty (leave it out for the queue "default")`)
		}
		out.Queue = *o.Queue
	}
	if o.MaxAttempts != nil {
		if *o.MaxAttempts < 1 {
			return nil, invalid(prefix+"max_attempts", fmt.Sprintf("must be at least 1, got %d (leave it out for the default, %d)", *o.MaxAttempts, hopper.DefaultMaxAttempts))
		}
		out.MaxAttempts = *o.MaxAttempts
	}
	if o.Timeout != nil {
		d, err := parseDuration(prefix+"timeout", *o.Timeout)
		if err != nil {
			return nil, err
		}
		if d <= 0 {
			return nil, invalid(prefix+"timeout", fmt.Sprintf("must be positive, got %s (leave it out for none)", d))
		}
		out.Timeout = d
	}
	if len(o.Retry) > 0 && string(o.Retry) != "null" {
		p, err := parseRetry(o.Retry, prefix+"retry.")
		if err != nil {
			return nil, err
		}
		out.Retry = p
	}
	return out, nil
}

// parseRetry decodes a retry policy strictly, durations as strings.
func parseRetry(b []byte, prefix string) (*backoff.Policy, error) {
	var v retryJSON
	if err := decodeStrict(b, &v, prefix); err != nil {
		return nil, err
	}
	p := &backoff.Policy{Strategy: backoff.Strategy(v.Strategy), Factor: v.Factor, Jitter: backoff.Jitter(v.Jitter)}
	for _, d := range []struct {
		name string
		s    *string
		to   *time.Duration
	}{{"base", v.Base, &p.Base}, {"max", v.Max, &p.Max}} {
		if d.s == nil {
			continue
		}
		x, err := parseDuration(prefix+d.name, *d.s)
		if err != nil {
			return nil, err
		}
		if x <= 0 {
			return nil, invalid(prefix+d.name, fmt.Sprintf("must be positive, got %s (leave it out for the default)", x))
		}
		*d.to = x
	}
	for i, s := range v.Delays {
		x, err := parseDuration(fmt.Sprintf("%sdelays[%d]", prefix, i), s)
		if err != nil {
			return nil, err
		}
		p.Delays = append(p.Delays, x)
	}
	if err := p.Validate(); err != nil {
		field, msg, ok := strings.Cut(err.Error(), ": ")
		if !ok || strings.Contains(field, " ") {
			field, msg = "", err.Error()
		}
		if f, _, ok := strings.Cut(field, ","); ok { // "base, max: ..."
			field = f
		}
		return nil, invalid(strings.TrimSuffix(prefix+field, "."), msg)
	}
	return p, nil
}

// jobRequest is one job to enqueue.
type jobRequest struct {
	Kind string          `json:"kind"`
	Args json.RawMessage `json:"args"`
	jobOptions
	Delay     *string `json:"delay"`
	RunAt     *string `json:"run_at"`
	UniqueKey *string `json:"unique_key"`
}

// request checks jr and returns the EnqueueRequest it describes at now;
// fields are named after prefix.
func (jr *jobRequest) request(prefix string, now time.Time) (hopper.EnqueueRequest, error) {
	var none hopper.EnqueueRequest
	if strings.TrimSpace(jr.Kind) == "" {
		return none, invalid(prefix+"kind", "missing: every job has a kind, the name of its handler")
	}
	o, err := jr.options(prefix)
	if err != nil {
		return none, err
	}
	if jr.Delay != nil && jr.RunAt != nil {
		return none, invalid(prefix+"delay", "give delay or run_at, not both")
	}
	if jr.Delay != nil {
		d, err := parseDuration(prefix+"delay", *jr.Delay)
		if err != nil {
			return none, err
		}
		if d < 0 {
			return none, invalid(prefix+"delay", fmt.Sprintf("must not be negative, got %s", d))
		}
		if err := job.CheckTime(prefix+"delay", now.Add(d)); err != nil {
			return none, err
		}
		o.Delay = d
	}
	if jr.RunAt != nil {
		if o.RunAt, err = parseTime(prefix+"run_at", *jr.RunAt); err != nil {
			return none, err
		}
	}
	if jr.UniqueKey != nil {
		if *jr.UniqueKey == "" {
			return none, invalid(prefix+"unique_key", "must not be empty (leave it out for a job without one)")
		}
		o.UniqueKey = *jr.UniqueKey
	}
	var args any
	if len(jr.Args) > 0 && string(jr.Args) != "null" {
		args = jr.Args // kept byte for byte
	}
	return hopper.EnqueueRequest{Kind: jr.Kind, Args: args, Options: o}, nil
}
