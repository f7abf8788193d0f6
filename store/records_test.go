package store

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/hopperq/hopper/backoff"
	"github.com/hopperq/hopper/job"
)

// TestRecordsPinned: the stored encodings of attempts and retry policies
// are part of both SQL schemas; this pins them and their round trip.
func TestRecordsPinned(t *testing.T) {
	t.Parallel()
	berlin := time.FixedZone("CET", 3600)
	as := []job.Attempt{
		{Attempt: 1, StartedAt: time.Date(2026, 3, 1, 13, 0, 0, 5000, berlin), Duration: 1500 * time.Millisecond,
			Worker: "w1", Outcome: "failed", Error: "boom", Backoff: 2 * time.Second, Result: json.RawMessage(`{"out":"x"}`)},
		{Attempt: 2, StartedAt: time.Date(2026, 3, 1, 12, 0, 5, 0, time.UTC), Outcome: "completed"},
	}
	list, err := EncodeAttemptList(as)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"attempt":1,"started_at":"2026-03-01T12:00:00.000005Z","duration":1500000000,"worker":"w1","outcome":"failed","error":"boom","backoff":2000000000,"result":{"out":"x"}},` +
		`{"attempt":2,"started_at":"2026-03-01T12:00:05Z","duration":0,"outcome":"completed"}`
	if list != want {
		t.Errorf("EncodeAttemptList:\n got %s\nwant %s", list, want)
	}
	if empty, err := EncodeAttemptList(nil); empty != "" || err != nil {
		t.Errorf("EncodeAttemptList(nil) = %q, %v", empty, err)
	}
	back, err := DecodeAttempts([]byte("[" + list + "]"))
	if err != nil {
		t.Fatal(err)
	}
	as[0].StartedAt = as[0].StartedAt.UTC()
	if !reflect.DeepEqual(back, as) {
		t.Errorf("DecodeAttempts: got %+v, want %+v", back, as)
	}
	if _, err := DecodeAttempts([]byte("{")); err == nil {
		t.Error("DecodeAttempts of bad JSON: no error")
	}

	p := &backoff.Policy{Strategy: "list", Base: time.Second, Max: time.Hour, Factor: 2, Jitter: "full", Delays: []time.Duration{time.Second, 30 * time.Second}}
	enc, err := EncodePolicy(p)
	if err != nil {
		t.Fatal(err)
	}
	const wantP = `{"strategy":"list","base":1000000000,"max":3600000000000,"factor":2,"jitter":"full","delays":[1000000000,30000000000]}`
	if enc != wantP {
		t.Errorf("EncodePolicy:\n got %s\nwant %s", enc, wantP)
	}
	if got, err := DecodePolicy([]byte(enc)); err != nil || !reflect.DeepEqual(got, p) {
		t.Errorf("DecodePolicy: got %+v, %v, want %+v", got, err, p)
	}
	if s, err := EncodePolicy(nil); s != "" || err != nil {
		t.Errorf("EncodePolicy(nil) = %q, %v", s, err)
	}
	if got, err := DecodePolicy(nil); got != nil || err != nil {
		t.Errorf("DecodePolicy(empty) = %+v, %v", got, err)
	}
}
