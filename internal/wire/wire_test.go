package wire

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/backoff"
)

var now = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

func decodeJob(t *testing.T, doc string) (hopper.EnqueueRequest, error) {
	t.Helper()
	var j Job
	if err := Decode([]byte(doc), &j, ""); err != nil {
		return hopper.EnqueueRequest{}, err
	}
	return j.Request(now)
}

// TestJobRequest: one document, its fields left out or given, and what the
// library receives.
func TestJobRequest(t *testing.T) {
	t.Parallel()
	r, err := decodeJob(t, `{"kind":"k","args":{"a": 1},"queue":"q","priority":0,"max_attempts":3,"timeout":1.5,
		"retry":"fixed:5s","delay":"1m","unique_key":"u"}`)
	if err != nil {
		t.Fatal(err)
	}
	o := r.Options
	if r.Kind != "k" || string(r.Args.(json.RawMessage)) != `{"a": 1}` || o.Queue != "q" || o.Priority != hopper.PriorityZero ||
		o.MaxAttempts != 3 || o.Timeout != 1500*time.Millisecond || o.Retry.Strategy != backoff.StrategyFixed ||
		!o.RunAt.Equal(now.Add(time.Minute)) || o.UniqueKey != "u" {
		t.Errorf("request %+v, options %+v", r, o)
	}
	r, err = decodeJob(t, `{"kind":"k","retry":{"strategy":"list","delays":["1s",2]}}`)
	if err != nil || r.Args != nil || r.Options.Retry.Delays[1] != 2*time.Second || r.Options.Priority != 0 {
		t.Errorf("list retry: %+v, %v", r, err)
	}
}

// TestJobRequestRefused: each refusal names its field, in the document's
// terms.
func TestJobRequestRefused(t *testing.T) {
	t.Parallel()
	for doc, want := range map[string]string{
		``:                                             ": empty",
		`[]`:                                           ": want an object, got array",
		`{"kind":"k"} {}`:                              ": more than one JSON value",
		`{"kind":" "}`:                                 "kind: missing",
		`{"kind":"k","colour":1}`:                      "colour: unknown field",
		`{"kind":"k","queue":""}`:                      `queue: must not be empty (leave it out for the queue "default")`,
		`{"kind":"k","max_attempts":0}`:                "max_attempts: must be positive, got 0 (leave it out for the default, 25)",
		`{"kind":"k","timeout":"-1s"}`:                 "timeout: must not be negative, got -1s (0 is no timeout)",
		`{"kind":"k","timeout":"soon"}`:                `timeout: "soon" (want a Go duration`,
		`{"kind":"k","unique_key":""}`:                 "unique_key: must not be empty",
		`{"kind":"k","delay":"-1s"}`:                   "delay: must not be negative",
		`{"kind":"k","delay":"2000000h"}`:              "delay: ",
		`{"kind":"k","delay":"1s","run_at":""}`:        "delay: give delay or run_at, not both",
		`{"kind":"k","run_at":"soon"}`:                 `run_at: want a time such as`,
		`{"kind":"k","retry":{"base":"0s"}}`:           "retry.base: must be positive",
		`{"kind":"k","retry":{"delays":["x"]}}`:        "retry.delays[0]: ",
		`{"kind":"k","retry":{"colour":1}}`:            "retry.colour: unknown field",
		`{"kind":"k","retry":"fixed:0s"}`:              "retry: DELAY must be positive",
		`{"kind":"k","retry":""}`:                      "retry: empty; want exponential",
		`{"kind":"k","retry":"x","retry_backoff":"x"}`: "retry_backoff: give retry",
	} {
		_, err := decodeJob(t, doc)
		var fe *hopper.FieldError
		if !errors.As(err, &fe) || !strings.HasPrefix(fe.Field+": "+fe.Reason, want) {
			t.Errorf("%s: got %v, want a FieldError %q…", doc, err, want)
		}
	}
}

// TestRequestsIndexTheItem: a batch's error names its item as a field.
func TestRequestsIndexTheItem(t *testing.T) {
	t.Parallel()
	q := ""
	_, err := Requests([]Job{{Kind: "a"}, {Kind: "b", Options: Options{Queue: &q}}}, now)
	var fe *hopper.FieldError
	if !errors.As(err, &fe) || !fe.InBatch || fe.Index != 1 || fe.Field != "queue" {
		t.Errorf("got %#v, want item 1's queue", err)
	}
}

// TestScheduleRequest: the schedule document, and the explicit-zero rule
// on its own fields.
func TestScheduleRequest(t *testing.T) {
	t.Parallel()
	var s Schedule
	if err := Decode([]byte(`{"name":"n","every":60,"overlap":"allow","kind":"k","priority":0,"timeout":"0s"}`), &s, ""); err != nil {
		t.Fatal(err)
	}
	o, err := s.ScheduleOptions()
	if err != nil || o.Every != time.Minute || o.Overlap != hopper.OverlapAllow || o.Options.Priority != hopper.PriorityZero || o.Options.Timeout != hopper.NoTimeout {
		t.Errorf("%+v, %v", o, err)
	}
	for doc, field := range map[string]string{
		`{"name":"","cron":"@daily","kind":"k"}`:   "name",
		`{"name":"n","cron":" ","kind":"k"}`:       "cron",
		`{"name":"n","every":0,"kind":"k"}`:        "every",
		`{"name":"n","time_zone":"","kind":"k"}`:   "time_zone",
		`{"name":"n","overlap":"some","kind":"k"}`: "overlap",
	} {
		var s Schedule
		err := Decode([]byte(doc), &s, "")
		if err == nil {
			_, err = s.ScheduleOptions()
		}
		var fe *hopper.FieldError
		if !errors.As(err, &fe) || fe.Field != field {
			t.Errorf("%s: got %v, want a FieldError on %s", doc, err, field)
		}
	}
}

// TestReschedule: run_at, a delay (0: now) or a priority.
func TestReschedule(t *testing.T) {
	t.Parallel()
	var r Reschedule
	if _, _, err := r.Args(now); err == nil {
		t.Error("nothing: want an error")
	}
	if err := Decode([]byte(`{"delay":0,"priority":-1}`), &r, ""); err != nil {
		t.Fatal(err)
	}
	at, p, err := r.Args(now)
	if err != nil || !at.Equal(now) || *p != -1 {
		t.Errorf("got %s, %v, %v", at, p, err)
	}
}

// TestRetryForms: the compact form reads back as it is described.
func TestRetryForms(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"fixed:5s", "list:1s,30s", "exponential:1s,1h0m0s", "decorrelated:2s,1m0s"} {
		p, err := ParseRetry("retry", s)
		if err != nil || DescribeRetry(p) != s {
			t.Errorf("ParseRetry(%q) = %v, %v; described as %q", s, p, err, DescribeRetry(p))
		}
	}
}

// TestParseDuration: a form's duration, a Go string or seconds.
func TestParseDuration(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]time.Duration{"90s": 90 * time.Second, "2.5": 2500 * time.Millisecond} {
		if d, err := ParseDuration("d", s); err != nil || d != want {
			t.Errorf("ParseDuration(%q) = %s, %v", s, d, err)
		}
	}
	if _, err := ParseDuration("d", `"1s"`); err == nil {
		t.Error(`ParseDuration("\"1s\""): want an error`)
	}
}
