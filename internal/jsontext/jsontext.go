// Package jsontext shows stored JSON to people: indented, with the
// characters Go's encoder escapes for HTML (<, >, &) written as
// themselves. The command line's jobs get and the dashboard's job page
// share it, so a command such as "echo x >&2" reads the same in both.
package jsontext

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Indent returns the JSON document b indented (each line after the first
// beginning with prefix, one indent per level, as json.Indent does) with
// the escapes \u003c, \u003e and \u0026 turned back into <, > and &, and
// true; or b as it is and false if b is not JSON. The result is for
// reading, not for parsing by a program that then puts it in HTML.
func Indent(b []byte, prefix, indent string) (string, bool) {
	var buf bytes.Buffer
	if json.Indent(&buf, b, prefix, indent) != nil {
		return string(b), false
	}
	return UnescapeHTML(buf.String()), true
}

// UnescapeHTML turns the \u003c, \u003e and \u0026 escapes that Go's JSON
// encoder writes for <, > and & (in either case) back into the characters, leaving every
// other escape (\\u003c, an escaped backslash before "u003c", included)
// as it is. s is JSON text; the result is the same JSON document.
func UnescapeHTML(s string) string {
	if !strings.Contains(s, `\u00`) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		if i+5 < len(s) && s[i+1] == 'u' {
			if r, ok := htmlEscapes[strings.ToLower(s[i+2:i+6])]; ok {
				b.WriteByte(r)
				i += 5
				continue
			}
		}
		b.WriteString(s[i : i+2]) // an escape pair, copied whole
		i++
	}
	return b.String()
}

// htmlEscapes are the escapes encoding/json writes for HTML's sake.
var htmlEscapes = map[string]byte{"003c": '<', "003e": '>', "0026": '&'}
