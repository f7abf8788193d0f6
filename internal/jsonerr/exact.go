package jsonerr

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// A JSON string holds Unicode text only, and encoding/json replaces what is
// not text with U+FFFD when it decodes one, silently: bytes that are not
// UTF-8, and \u escapes of UTF-16 surrogates that are not one half of a
// pair ("\ud800"), which are valid UTF-8 and valid JSON but encode no
// character. A program that acts on the decoded value (a command line, a
// file name, a request) would then act on something other than what was
// sent. Inexact finds such strings, so that they are refused instead.

// Inexact returns why decoding the JSON document raw would not give back
// every string exactly, naming the first string at fault by its path in
// the document ("args[1]", "headers.X-Token"; a key by itself, followed by
// " (a key)"): `args[1] is not valid UTF-8: ...`, `env[0] holds \ud800,
// ...`. It returns "" when every string decodes exactly. Of raw that is
// not JSON, it reports a string at fault before the point where the JSON
// goes wrong, else bytes that are not UTF-8 anywhere, else nothing
// (decoding says what is wrong). When there is nothing to report, it costs
// a pass over raw and a search for backslashes, allocating nothing.
func Inexact(raw []byte) string {
	valid := utf8.Valid(raw)
	if valid && loneSurrogate(raw) < 0 {
		return ""
	}
	path, esc, found := inexactString(raw)
	switch {
	case found && esc != "":
		return path + " holds " + esc + ", half of a UTF-16 surrogate pair without the other half, which no Unicode text can carry (decoding would replace it with U+FFFD)"
	case found:
		return path + " is not valid UTF-8: JSON text cannot carry these bytes exactly"
	case !valid:
		return "not valid UTF-8: JSON text cannot carry these bytes exactly"
	}
	return ""
}

// loneSurrogate returns the offset in raw, JSON text, of the first \u
// escape of a surrogate that is not half of a pair, or -1. Outside strings
// a backslash is not JSON, so raw's escapes are found without parsing it.
func loneSurrogate(raw []byte) int {
	for i := 0; ; {
		j := bytes.IndexByte(raw[i:], '\\')
		if j < 0 {
			return -1
		}
		i += j
		r := escapedRune(raw, i)
		switch {
		case r < 0: // another escape: \\, \", \n ...
			i += 2
		case !utf16.IsSurrogate(r):
			i += 6
		case r < 0xdc00 && utf16.DecodeRune(r, escapedRune(raw, i+6)) != utf8.RuneError:
			i += 12 // a pair
		default:
			return i
		}
	}
}

// escapedRune returns the code unit of the \uXXXX escape at raw[i:], or -1
// if there is none there.
func escapedRune(raw []byte, i int) rune {
	if i+6 > len(raw) || raw[i] != '\\' || raw[i+1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range raw[i+2 : i+6] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
}

// inexactString returns the path in the JSON document raw of the first
// string that holds bytes that are not UTF-8 or a lone surrogate (esc,
// the escape, in that case); found is false if there is none or raw is
// not JSON.
func inexactString(raw []byte) (path, esc string, found bool) {
	type frame struct {
		array   bool
		index   int    // array: index of the next value
		key     string // object: key of the value being read
		wantKey bool   // object: the next string is a key
	}
	var stack []frame
	// pathOf names the value being read; key, if set, replaces the
	// innermost object's key (a bad key is reported as its own path).
	pathOf := func(key string) string {
		var b strings.Builder
		for i, f := range stack {
			if f.array {
				b.WriteString("[" + strconv.Itoa(f.index) + "]")
				continue
			}
			k := f.key
			if i == len(stack)-1 && key != "" {
				k = key
			}
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(k)
		}
		if b.Len() == 0 {
			return "the string"
		}
		return b.String()
	}
	// valueDone moves the innermost container past the value just read.
	valueDone := func() {
		if n := len(stack); n > 0 {
			if stack[n-1].array {
				stack[n-1].index++
			} else {
				stack[n-1].wantKey = true
			}
		}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	for {
		before := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return "", "", false
		}
		text := raw[before:dec.InputOffset()]
		bad := !utf8.Valid(text)
		if i := loneSurrogate(text); i >= 0 && !bad {
			esc, bad = string(text[i:i+6]), true
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				stack = append(stack, frame{wantKey: true})
			case '[':
				stack = append(stack, frame{array: true})
			default:
				stack = stack[:len(stack)-1]
				valueDone()
			}
		case string:
			if n := len(stack); n > 0 && !stack[n-1].array && stack[n-1].wantKey {
				if bad {
					return pathOf(t) + " (a key)", esc, true
				}
				stack[n-1].key, stack[n-1].wantKey = t, false
				continue
			}
			if bad {
				return pathOf(""), esc, true
			}
			valueDone()
		default:
			valueDone()
		}
		if len(stack) == 0 {
			return "", "", false
		}
	}
}
