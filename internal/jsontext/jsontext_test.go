package jsontext

import "testing"

// TestIndent: the HTML escapes of Go's encoder read as the characters,
// other escapes stay, and text that is not JSON comes back as it is.
func TestIndent(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in, want string
		ok       bool
	}{
		{`{"args":["-c","echo x \u003e\u00262; a \u003c b"]}`, "{\n  \"args\": [\n    \"-c\",\n    \"echo x >&2; a < b\"\n  ]\n}", true},
		{`"\u003C\u003E"`, `"<>"`, true},
		{`"\\u003c \u00e9 \n \""`, `"\\u003c \u00e9 \n \""`, true}, // an escaped backslash, other escapes
		{`"tail\u0026"`, `"tail&"`, true},
		{`"\u003"`, `"\u003"`, false}, // not JSON
		{`not json <`, `not json <`, false},
	} {
		got, ok := Indent([]byte(c.in), "", "  ")
		if got != c.want || ok != c.ok {
			t.Errorf("Indent(%s) = %q, %v; want %q, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}
