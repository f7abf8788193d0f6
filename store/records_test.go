package store

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strconv"
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

// TestEncodeAttemptMatchesMarshal: the hand-written encoding of an attempt
// record gives json.Marshal's bytes, for random records and for every
// character class that json.Marshal escapes or that sends EncodeAttempt
// to its fallback.
func TestEncodeAttemptMatchesMarshal(t *testing.T) {
	t.Parallel()
	texts := []string{"", "w1", "boom", `say "hi"`, `C:\dir`, "a<b", "a>b", "a&b", "tab\there", "nl\n", "\x00", "\x7f", "café", "\u2028", "\xff", "a/b'c"}
	times := []time.Time{
		time.Date(2026, 3, 1, 13, 0, 0, 5000, time.FixedZone("CET", 3600)),
		time.Date(2026, 3, 1, 12, 0, 5, 0, time.UTC),
		time.Date(2026, 3, 1, 12, 0, 5, 123456789, time.UTC),
		time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC),
		{},
	}
	results := []json.RawMessage{nil, json.RawMessage(`{"out": "x"}`)}
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(n int) int { return rng.IntN(n) }
	for i := range 20000 {
		a := job.Attempt{
			Attempt:   pick(1000) - 1,
			StartedAt: times[pick(len(times))],
			Duration:  time.Duration(rng.Int64() >> uint(pick(64))),
			Worker:    texts[pick(len(texts))],
			Outcome:   texts[pick(len(texts))],
			Error:     texts[pick(len(texts))],
			Backoff:   time.Duration(pick(3)-1) * time.Duration(rng.Int64()>>uint(pick(64))),
			Result:    results[pick(len(results))],
		}
		if i%2 == 0 { // half the records without escapes, on the fast path
			a.Worker, a.Outcome, a.Error, a.Result = "w"+strconv.Itoa(i), "completed", "", nil
			a.StartedAt = times[pick(3)]
		}
		got, gotErr := EncodeAttempt(a)
		want, wantErr := marshalAttempt(a, a.StartedAt.UTC())
		if got != want || (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("EncodeAttempt(%+v):\n got %s, %v\nwant %s, %v", a, got, gotErr, want, wantErr)
		}
	}
}

// BenchmarkEncodeAttempt encodes the record of a successful attempt, the
// one Finish writes for most jobs, by hand (EncodeAttempt) and with
// json.Marshal (its fallback).
func BenchmarkEncodeAttempt(b *testing.B) {
	a := job.Attempt{Attempt: 1, StartedAt: time.Now(), Duration: 1500 * time.Microsecond, Worker: "host:1234:9f86d081", Outcome: "completed"}
	for _, marshal := range []bool{false, true} {
		b.Run(map[bool]string{false: "append", true: "marshal"}[marshal], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var err error
				if marshal {
					_, err = marshalAttempt(a, a.StartedAt.UTC())
				} else {
					_, err = EncodeAttempt(a)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
