package store

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hopperq/hopper/backoff"
	"github.com/hopperq/hopper/job"
)

// The SQL stores keep a job's attempt history and retry policy as JSON of
// their own, not the public JSON (which may change without a migration):
// durations in integer nanoseconds, times as RFC 3339 text in UTC. These
// encodings are part of the SQLite and PostgreSQL schemas; change them only
// with migrations of both.

// attemptRecord is one attempt as stored. The names and formats are what
// schema version 1 wrote; result is new in SQLite's version 2.
type attemptRecord struct {
	Attempt   int             `json:"attempt"`
	StartedAt time.Time       `json:"started_at"`
	Duration  int64           `json:"duration"`
	Worker    string          `json:"worker,omitempty"`
	Outcome   string          `json:"outcome"`
	Error     string          `json:"error,omitempty"`
	Backoff   int64           `json:"backoff,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
}

// EncodeAttempt encodes one attempt record, an element of the stored
// attempts array. Finish encodes one per job, so the common record — no
// result, plain ASCII text, a time in years 0–9999 — is appended by hand
// (json.Marshal was 8% of the CPU of a PostgreSQL worker process); any
// other goes through json.Marshal. Both give the same bytes
// (TestEncodeAttemptMatchesMarshal).
func EncodeAttempt(a job.Attempt) (string, error) {
	t := a.StartedAt.UTC()
	if len(a.Result) > 0 || t.Year() < 0 || t.Year() > 9999 || !plainJSON(a.Worker) || !plainJSON(a.Outcome) || !plainJSON(a.Error) {
		return marshalAttempt(a, t)
	}
	b := make([]byte, 0, 144+len(a.Worker)+len(a.Outcome)+len(a.Error))
	b = append(b, `{"attempt":`...)
	b = strconv.AppendInt(b, int64(a.Attempt), 10)
	b = append(b, `,"started_at":"`...)
	b = t.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","duration":`...)
	b = strconv.AppendInt(b, int64(a.Duration), 10)
	if a.Worker != "" {
		b = append(append(append(b, `,"worker":"`...), a.Worker...), '"')
	}
	b = append(append(append(b, `,"outcome":"`...), a.Outcome...), '"')
	if a.Error != "" {
		b = append(append(append(b, `,"error":"`...), a.Error...), '"')
	}
	if a.Backoff != 0 {
		b = append(b, `,"backoff":`...)
		b = strconv.AppendInt(b, int64(a.Backoff), 10)
	}
	return string(append(b, '}')), nil
}

func marshalAttempt(a job.Attempt, t time.Time) (string, error) {
	b, err := json.Marshal(attemptRecord{Attempt: a.Attempt, StartedAt: t, Duration: int64(a.Duration),
		Worker: a.Worker, Outcome: a.Outcome, Error: a.Error, Backoff: int64(a.Backoff), Result: a.Result})
	if err != nil {
		return "", fmt.Errorf("encoding attempt record: %w", err)
	}
	return string(b), nil
}

// plainJSON reports whether json.Marshal writes s between quotes as it is:
// printable ASCII without the characters it escapes (", \, <, >, &).
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// EncodeAttemptList encodes attempt records as the elements of a JSON array,
// comma-separated, without the brackets; "" for none.
func EncodeAttemptList(as []job.Attempt) (string, error) {
	var b strings.Builder
	for i, a := range as {
		t, err := EncodeAttempt(a)
		if err != nil {
			return "", err
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(t)
	}
	return b.String(), nil
}

// DecodeAttempts decodes a stored attempts array.
func DecodeAttempts(b []byte) ([]job.Attempt, error) {
	var rows []attemptRecord
	if err := json.Unmarshal(b, &rows); err != nil {
		return nil, fmt.Errorf("decoding attempts: %w", err)
	}
	as := make([]job.Attempt, len(rows))
	for i, r := range rows {
		as[i] = job.Attempt{Attempt: r.Attempt, StartedAt: r.StartedAt, Duration: time.Duration(r.Duration), Worker: r.Worker,
			Outcome: r.Outcome, Error: r.Error, Backoff: time.Duration(r.Backoff), Result: r.Result}
		if !as[i].StartedAt.IsZero() {
			as[i].StartedAt = as[i].StartedAt.UTC()
		}
	}
	return as, nil
}

// policyRecord is a retry policy as stored.
type policyRecord struct {
	Strategy string  `json:"strategy,omitempty"`
	Base     int64   `json:"base,omitempty"`
	Max      int64   `json:"max,omitempty"`
	Factor   float64 `json:"factor,omitempty"`
	Jitter   string  `json:"jitter,omitempty"`
	Delays   []int64 `json:"delays,omitempty"`
}

// EncodePolicy encodes a retry policy; nil is "".
func EncodePolicy(p *backoff.Policy) (string, error) {
	if p == nil {
		return "", nil
	}
	r := policyRecord{Strategy: string(p.Strategy), Base: int64(p.Base), Max: int64(p.Max), Factor: p.Factor, Jitter: string(p.Jitter)}
	for _, d := range p.Delays {
		r.Delays = append(r.Delays, int64(d))
	}
	b, err := json.Marshal(r)
	if err != nil {
		return "", fmt.Errorf("encoding retry policy: %w", err)
	}
	return string(b), nil
}

// DecodePolicy decodes a stored retry policy; empty is nil.
func DecodePolicy(b []byte) (*backoff.Policy, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var r policyRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("decoding retry policy: %w", err)
	}
	p := &backoff.Policy{Strategy: backoff.Strategy(r.Strategy), Base: time.Duration(r.Base), Max: time.Duration(r.Max),
		Factor: r.Factor, Jitter: backoff.Jitter(r.Jitter)}
	for _, d := range r.Delays {
		p.Delays = append(p.Delays, time.Duration(d))
	}
	return p, nil
}

// labelsRecord is a job's or a schedule's metadata and tags as stored: the
// SQL stores' labels column, NULL (the empty string here) when both are
// empty.
type labelsRecord struct {
	Meta map[string]string `json:"meta,omitempty"`
	Tags []string          `json:"tags,omitempty"`
}

// EncodeLabels encodes metadata and tags for the labels column; none is "".
func EncodeLabels(meta map[string]string, tags []string) (string, error) {
	if len(meta) == 0 && len(tags) == 0 {
		return "", nil
	}
	b, err := json.Marshal(labelsRecord{Meta: meta, Tags: tags})
	if err != nil {
		return "", fmt.Errorf("encode labels: %w", err)
	}
	return string(b), nil
}

// DecodeLabels decodes a stored labels column; empty is none.
func DecodeLabels(b []byte) (map[string]string, []string, error) {
	if len(b) == 0 {
		return nil, nil, nil
	}
	var r labelsRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, nil, fmt.Errorf("stored labels: %w", err)
	}
	if len(r.Meta) == 0 {
		r.Meta = nil
	}
	return r.Meta, r.Tags, nil
}
