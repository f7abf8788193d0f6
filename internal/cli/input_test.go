package cli

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/kinds"
)

// TestInputRefused: input that the library would read as "unset", or that
// it cannot keep exactly, is a usage error naming the flag and the reason,
// and nothing is enqueued.
func TestInputRefused(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	hop(t, db, "migrate").ok(t)
	for _, tc := range []struct {
		args []string
		want []string
	}{
		// Zero where the library's zero means "default".
		{[]string{"enqueue", "--max-attempts", "0", "exec", "true"}, []string{"--max-attempts 0", "must be positive", "default, 25"}},
		{[]string{"enqueue", "--timeout", "-1s", "exec", "true"}, []string{"--timeout -1s", "must not be negative", "0 is no timeout"}},
		{[]string{"enqueue", "--queue", "", "exec", "true"}, []string{"--queue", "must not be empty"}},
		{[]string{"enqueue", "--unique", "", "exec", "true"}, []string{"--unique", "must not be empty"}},
		{[]string{"enqueue", "--debounce", "5s", "exec", "true"}, []string{"--debounce 5s", "needs a unique_key"}},
		{[]string{"enqueue", "--unique", "k", "--debounce", "0s", "exec", "true"}, []string{"--debounce 0s", "must be positive"}},
		{[]string{"enqueue", "--unique", "k", "--debounce-max", "1m", "exec", "true"}, []string{"--debounce", "missing"}},
		{[]string{"enqueue", "--unique", "k", "--debounce", "1m", "--debounce-max", "1s", "exec", "true"}, []string{"--debounce-max 1s", "shorter than the period"}},
		{[]string{"enqueue", "--unique", "k", "--debounce", "1m", "--delay", "1s", "exec", "true"}, []string{"--debounce 1m", "set no delay"}},
		{[]string{"enqueue", "--retry-backoff", "", "exec", "true"}, []string{"--retry-backoff", "empty"}},
		{[]string{"enqueue", "--retry-backoff", "fixed:0s", "exec", "true"}, []string{"--retry-backoff", "DELAY must be positive"}},
		{[]string{"enqueue", "--retry-backoff", "exponential:0s,1m", "exec", "true"}, []string{"--retry-backoff", "BASE must be positive"}},
		// Invalid backoffs.
		{[]string{"enqueue", "--retry-backoff", "exponential:2h", "exec", "true"}, []string{"--retry-backoff", "BASE 2h0m0s is more than MAX 1h0m0s", "the default MAX"}},
		{[]string{"enqueue", "--retry-backoff", "decorrelated:1m,1s", "exec", "true"}, []string{"--retry-backoff", "BASE 1m0s is more than MAX 1s"}},
		{[]string{"enqueue", "--retry-backoff", "jittery", "exec", "true"}, []string{"--retry-backoff", "decorrelated[:BASE[,MAX]]"}},
		// Times out of the range stores keep.
		{[]string{"enqueue", "--at", "2300-01-01T00:00:00Z", "exec", "true"}, []string{"bad --at 2300-01-01T00:00:00Z", "1970-01-01 to 2200-12-31"}},
		{[]string{"enqueue", "--at", "1969-07-20T20:17:00Z", "exec", "true"}, []string{"bad --at", "outside the supported range"}},
		{[]string{"enqueue", "--delay", "2000000h", "exec", "true"}, []string{"bad --delay", "outside the supported range"}},
		{[]string{"jobs", "reschedule", "1", "--at", "2300-01-01T00:00:00Z"}, []string{"bad --at", "outside the supported range"}},
		// Bounds.
		{[]string{"serve", "--workers", "10001"}, []string{"bad --workers 10001", "between 1 and 10000"}},
		{[]string{"serve", "--workers", "-1"}, []string{"bad --workers -1"}},
		{[]string{"bench", "--workers", "20000"}, []string{"bad --workers 20000"}},
		{[]string{"enqueue", "exec", "--permanent-exit-codes", "0", "--", "true"}, []string{"--permanent-exit-codes", "0 is not an exit code of a failure"}},
		{[]string{"enqueue", "--max-attempts", "10001", "exec", "true"}, []string{"bad --max-attempts 10001", "between 1 and 10000"}},
		{[]string{"enqueue", "--priority", "1000001", "exec", "true"}, []string{"priority", "between -1000000 and 1000000"}},
		{[]string{"enqueue", "--priority", "-1000001", "exec", "true"}, []string{"priority", "between -1000000 and 1000000"}},
		{[]string{"schedule", "add", "s", "--every", "1m", "--max-attempts", "10001", "exec", "true"}, []string{"bad --max-attempts 10001", "between 1 and 10000"}},
		{[]string{"schedule", "add", "s", "--every", "1m", "--priority", "1000001", "exec", "true"}, []string{"priority", "between"}},
		// Bytes that JSON cannot keep.
		{[]string{"enqueue", "exec", "--", "echo", "caf\xe9"}, []string{"args[0]", "not valid UTF-8", "byte 3 is 0xe9"}},
		{[]string{"enqueue", "exec", "--env", "A=\xff", "--", "true"}, []string{"env[0]", "not valid UTF-8"}},
		{[]string{"enqueue", "http", "--url", "https://example.com", "--data", "\xff\xfe"}, []string{"body", "not valid UTF-8"}},
		{[]string{"enqueue", "--external-kinds", "x", "exec", "true"}, []string{"unknown flag: --external-kinds"}},
		{[]string{"enqueue", "--external-kinds", "x"}, []string{"--external-kinds applies to --bulk only"}},
	} {
		hop(t, db, tc.args...).fails(t, 2, tc.want...)
	}
	if n := hop(t, db, "jobs", "count").ok(t).out; n != "0\n" {
		t.Fatalf("refused input enqueued %s jobs", strings.TrimSpace(n))
	}
	// What is refused as 0 stays fine when meant: --delay 0 is now, --priority 0 the default.
	id := hop(t, db, "enqueue", "--delay", "0s", "--priority", "0", "--max-attempts", "1", "--timeout", "1s", "exec", "true").ok(t).id(t)
	hop(t, db, "jobs", "reschedule", strconv.FormatInt(int64(id), 10), "--priority", "1000001").fails(t, 2, "priority", "between")
	hopIn(t, db, `{"kind":"exec","args":{"command":"true"},"max_attempts":10001}`, "enqueue", "--bulk").fails(t, 2, "line 1", "max_attempts", "between")
	// The library's error names the item of the batch (InBatch, Index): the line.
	ok := `{"kind":"exec","args":{"command":"true"}}` + "\n"
	hopIn(t, db, ok+ok+`{"kind":"exec","args":{"command":"true"},"max_attempts":10001}`, "enqueue", "--bulk").fails(t, 2, `line 3: invalid job: "max_attempts":`, "between")

	// Help lists every form of --retry-backoff.
	hop(t, db, "enqueue", "--help").ok(t).has(t, "exponential[:BASE[,MAX]]", "decorrelated[:BASE[,MAX]]", "fixed:DELAY", "list:D1,D2,...")
	hop(t, db, "schedule", "add", "--help").ok(t).has(t, "decorrelated[:BASE[,MAX]]")
}

// TestBulkKindsAndBytes: enqueue --bulk refuses kinds nobody serves unless
// they are listed in --external-kinds, and keeps bytes exactly or refuses
// the line.
func TestBulkKindsAndBytes(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	hopIn(t, db, `{"kind":"exec","args":{"command":"true"}}`+"\n"+`{"kind":"send_emial","args":{}}`, "enqueue", "--bulk").
		fails(t, 2, "line 2", `kind "send_emial"`, "exec and http only", "--external-kinds send_emial")
	hopIn(t, db, `{"kind":"send_email","args":{}}`, "enqueue", "--bulk", "--external-kinds", "resize").
		fails(t, 2, "line 1", `"send_email"`)
	hopIn(t, db, `{"kind":"send_email","args":{"to":"a@b"}}`, "enqueue", "--bulk", "--external-kinds", "send_email,resize").ok(t)
	hopIn(t, db, `{"kind":"x"}`, "enqueue", "--bulk", "--external-kinds", "x,").fails(t, 2, "--external-kinds", "must not be empty")

	// Bytes: a line that is not UTF-8 is refused, whichever field holds
	// the bytes (JSON decoding would have replaced them).
	hopIn(t, db, "{\"kind\":\"exec\",\"queue\":\"q\xff\",\"args\":{\"command\":\"true\"}}", "enqueue", "--bulk").
		fails(t, 2, "line 1", "not valid UTF-8")
	hopIn(t, db, "{\"kind\":\"exec\",\"args\":{\"command\":\"echo\",\"args\":[\"\xe9\"]}}", "enqueue", "--bulk").
		fails(t, 2, "line 1", "not valid UTF-8")
	// Explicit zeros are refused, as with flags.
	hopIn(t, db, `{"kind":"exec","args":{"command":"true"},"max_attempts":0}`, "enqueue", "--bulk").fails(t, 2, "line 1", "max_attempts", "must be positive")
	hopIn(t, db, `{"kind":"exec","args":{"command":"true"},"timeout":"-1s"}`, "enqueue", "--bulk").fails(t, 2, "line 1", "timeout", "negative")
	hopIn(t, db, `{"kind":"exec","args":{"command":"true"},"queue":""}`, "enqueue", "--bulk").fails(t, 2, "line 1", "queue", "empty")
	hopIn(t, db, `{"kind":"exec","args":{"command":"true"},"run_at":"2999-01-01T00:00:00Z"}`, "enqueue", "--bulk").fails(t, 2, "line 1", "run_at", "outside the supported range")
	// Lines that are not jobs are told in the line's terms, not Go's.
	for line, want := range map[string][]string{
		`[1]`:            {"want an object, got array"},
		`{"kind":"exec"`: {"not valid JSON"},
		`{"kind":"exec","args":{"command":"true"},"delay":"5x"}`:    {`"delay": "5x"`, `want a Go duration`},
		`{"kind":"exec","args":{"command":"true"},"run_at":"soon"}`: {`"run_at": want a time`, "RFC 3339", `"soon"`},
		`{"kind":"exec","args":{"command":"true"},"priority":"hi"}`: {`"priority": want an integer, got string`},
		`{"kind":"exec","args":{"command":"true","bogus":1}}`:       {`exec: bad args: unknown field "bogus"`},
		`{"kind":"exec","args":{"command":5}}`:                      {`exec: bad args: "command": want a string, got number`},
	} {
		r := hopIn(t, db, line, "enqueue", "--bulk")
		r.fails(t, 2, append([]string{"line 1: "}, want...)...)
		if strings.Contains(r.err, "Go struct") || strings.Contains(r.err, "kinds.") || strings.Contains(r.err, "cli.") {
			t.Errorf("%s: the error names Go types: %s", line, r.err)
		}
	}
	if n := hop(t, db, "jobs", "count").ok(t).out; n != "1\n" {
		t.Fatalf("%s jobs, want the 1 send_email", strings.TrimSpace(n))
	}

	// Args are stored byte for byte: escapes, spacing and key order kept.
	line := `{"kind":"exec","args":{ "command" : "echo", "args":["caf\u00e9 \"x\"", "€"] }}`
	hopIn(t, db, line, "enqueue", "--bulk").ok(t)
	c, err := hopper.Open(context.Background(), "sqlite:"+db, hopper.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop(context.Background())
	j, err := c.Get(context.Background(), 2)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{ "command" : "echo", "args":["caf\u00e9 \"x\"", "€"] }`; string(j.Args) != want {
		t.Errorf("args stored as %s, want %s", j.Args, want)
	}
	var a kinds.ExecArgs
	if err := json.Unmarshal(j.Args, &a); err != nil || a.Args[0] != `café "x"` || a.Args[1] != "€" {
		t.Errorf("args %+v (%v)", a, err)
	}
}

// TestPrintJSONValidUTF8: whatever a store holds, --json prints valid
// UTF-8 (args and results are copied as they are by Go's encoder).
func TestPrintJSONValidUTF8(t *testing.T) {
	t.Parallel()
	j := &hopper.Job{ID: 1, Kind: "x", Args: json.RawMessage("{\"a\":\"\xff\xfeok\"}"), Result: json.RawMessage("\"\xc3\"")}
	var b strings.Builder
	if err := printJSON(&b, j); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !utf8.ValidString(out) || !json.Valid([]byte(out)) || !strings.Contains(out, "\ufffdok") {
		t.Fatalf("printJSON wrote %q", out)
	}
}
