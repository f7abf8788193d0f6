package httpapi

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/internal/reqbody"
	"github.com/hopperq/hopper/internal/wire"
	"github.com/hopperq/hopper/job"
)

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

// decodeStrict decodes b, one JSON value, into v, refusing unknown fields
// (wire.Decode). Errors name the field, after prefix; a fault of the whole
// body names "body".
func decodeStrict(b []byte, v any, prefix string) error {
	err := wire.Decode(b, v, prefix)
	var fe *hopper.FieldError
	if errors.As(err, &fe) {
		return invalid(cmp.Or(fe.Field, "body"), fe.Reason)
	}
	return err
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

// query is a request's query parameters (parseQuery), read through its
// methods: each refuses a parameter given twice or not in UTF-8, naming
// it.
type query map[string][]string

func parseQuery(r *http.Request) (query, error) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, invalid("query", "malformed query string: "+err.Error())
	}
	return query(q), nil
}

// one returns the single value of name ("" if absent): queryOne.
func (q query) one(name string) (string, error) { return queryOne(q, name) }

// flag reads name as true or false; absent is false.
func (q query) flag(name string) (bool, error) {
	switch v, err := q.one(name); {
	case err != nil:
		return false, err
	case v == "" || v == "false":
		return false, nil
	case v == "true":
		return true, nil
	default:
		return false, invalid(name, fmt.Sprintf("want true or false, got %q", v))
	}
}

// number reads name as a whole number from lo to hi, spaces around it
// allowed: given reports whether it was there (absent or empty: 0,
// false). Another value is invalid, with the message bad(value).
func (q query) number(name string, lo, hi int64, bad func(v string) string) (n int64, given bool, err error) {
	v, err := q.one(name)
	if err != nil || v == "" {
		return 0, false, err
	}
	n, err = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, false, invalid(name, bad(v))
	}
	return n, true, nil
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
