package jsonerr

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestInexact checks which JSON documents decode to other strings than
// they hold, and the path and reason given for each: bytes that are not
// UTF-8 and \u escapes of lone surrogates are found wherever they are
// (values, keys, nested, the document itself); pairs and escaped
// backslashes are text.
func TestInexact(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ doc, want string }{
		{`{"a":"x","b":[1,"\u00e9\ud83d\ude00"]}`, ""},
		{`{"a":"\\ud800"}`, ""}, // an escaped backslash, then text
		{`{"a":"\\\ud800"}`, `a holds \ud800, half of a UTF-16 surrogate pair`},
		{`{"a":"\ud800"}`, `a holds \ud800, half of a UTF-16 surrogate pair`},
		{`{"a":"\uDBFF\u0041"}`, `a holds \uDBFF, `},
		{`{"a":"\udc00\ud800"}`, `a holds \udc00, `},
		{`{"a":"\ud83d\ude00\ude00"}`, `a holds \ude00, `},
		{`{"a":"x\ud800"}`, `a holds \ud800, `},
		{`{"a":"ok","b":{"c":["x","y","\ud800"]}}`, `b.c[2] holds \ud800, `},
		{`{"a":{"k\ud800":1}}`, "a.k\uFFFD (a key) holds \\ud800, "},
		{`"\ud800"`, `the string holds \ud800, `},
		{`[{"a":1},"\ud800"]`, `[1] holds \ud800, `},
		{"{\"a\":[\"ok\",\"caf\xe9\"]}", `a[1] is not valid UTF-8: JSON text cannot carry these bytes exactly`},
		{"{\"k\xff\":1}", "k\uFFFD (a key) is not valid UTF-8"},
		// Not JSON: what comes before the JSON goes wrong is reported.
		{"{\"a\":\"\xff\"", `a is not valid UTF-8`},
		{`{"a":"\ud800"`, `a holds \ud800, `},
		{"{\"a\":[1,}\xff", `not valid UTF-8: JSON text cannot carry these bytes exactly`},
		{`{"a":[1,}"\ud800"`, ""}, // decoding says why
		{`{"a":"\u12"}`, ""},
	} {
		got := Inexact([]byte(tc.doc))
		if tc.want == "" && got != "" || !strings.HasPrefix(got, tc.want) {
			t.Errorf("Inexact(%s) = %q, want %q…", tc.doc, got, tc.want)
		}
		if tc.want == "" && json.Valid([]byte(tc.doc)) {
			var v any // what Inexact passes decodes to itself
			if err := json.Unmarshal([]byte(tc.doc), &v); err != nil {
				t.Fatal(err)
			}
			if b, _ := json.Marshal(v); strings.Contains(string(b), "\uFFFD") {
				t.Errorf("%s decodes to %s", tc.doc, b)
			}
		}
	}
}

// BenchmarkInexact measures the check of args with nothing to report, as
// every Enqueue of a kind registered with Register runs it.
func BenchmarkInexact(b *testing.B) {
	for _, bc := range []struct{ name, doc string }{
		{"plain", `{"command":"/usr/local/bin/report","args":["--since","2026-01-01","--format","csv","--out","/var/reports/daily.csv"],"env":["TZ=UTC"],"timeout":"5m"}`},
		{"escapes", `{"text":"line one\nline two \"quoted\" caf\u00e9 \ud83d\ude00","path":"C:\\Users\\x"}`},
	} {
		doc := []byte(bc.doc)
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if Inexact(doc) != "" {
					b.Fatal("inexact")
				}
			}
		})
	}
}
