package kinds

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Job args are JSON text, and JSON strings hold Unicode text only:
// encoding/json replaces bytes that are not UTF-8 with U+FFFD, on encoding
// and on decoding alike, so a command line or a request body holding such
// bytes would silently run as something else; so would a \u escape of a
// lone UTF-16 surrogate ("\ud800"), which decodes to U+FFFD too. Input is
// therefore checked and refused: decoded strings by checkText, raw JSON
// args, before decoding, by jsonerr.Inexact (every kind registered with
// hopper.Register refuses such args). Output is different: a
// command's output and a response body are kept as text for people to
// read, so bytes that are not UTF-8 there are replaced (outputText).

// errExcerptSize bounds the excerpt of stderr or of a response body that an
// error message carries; the full tails are in the attempt's result.
const errExcerptSize = 200

// checkText reports an error naming field if s is not valid UTF-8.
func checkText(kind, field, s string) error {
	if utf8.ValidString(s) {
		return nil
	}
	at := 0
	for at < len(s) {
		r, n := utf8.DecodeRuneInString(s[at:])
		if r == utf8.RuneError && n == 1 {
			break
		}
		at += n
	}
	return fmt.Errorf("%s: %s is not valid UTF-8 (byte %d is %#x): job args are JSON text, which cannot carry these bytes exactly",
		kind, field, at, s[at])
}

// outputText returns b, the kept part of an output, as text: each run of
// bytes that are not UTF-8 becomes one U+FFFD. cutStart and cutEnd say
// whether b was cut out of a longer output at its start or at its end; a
// character split by such a cut is dropped rather than replaced.
func outputText(b []byte, cutStart, cutEnd bool) string {
	if cutStart {
		for i := 0; i < utf8.UTFMax-1 && len(b) > 0 && !utf8.RuneStart(b[0]); i++ {
			b = b[1:]
		}
	}
	if cutEnd {
		for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
			if utf8.RuneStart(b[i]) {
				if !utf8.FullRune(b[i:]) {
					b = b[:i]
				}
				break
			}
		}
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// lastLine returns the last non-blank line of s, trimmed, keeping at most
// errExcerptSize bytes of its end.
func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[i+1:])
	}
	if len(s) <= errExcerptSize {
		return s
	}
	cut := len(s) - errExcerptSize
	for cut < len(s) && !utf8.RuneStart(s[cut]) {
		cut++
	}
	return "…" + s[cut:]
}

// firstLine returns the first non-blank line of s, trimmed, keeping at most
// errExcerptSize bytes of its start.
func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	if len(s) <= errExcerptSize {
		return s
	}
	cut := errExcerptSize
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
