package httpauth

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Tokens as people write them: "NAME=SCOPE:SECRET", or "SCOPE:SECRET"
// for a token named after where it was written. A name is 1 to 64
// letters, digits, dots, dashes and underscores; the default names hold a
// "#" or a ":", so they never collide with a name given.

// maxGivenName bounds a name written in a token spec.
const maxGivenName = 64

// example is how a token is written, for error messages.
var example = "ci=write:" + strings.Repeat("x", MinSecretLen)

// parseItem reads "[NAME=]SCOPE:SECRET", where SCOPE may be
// "worker/Q1/Q2…" for a worker token limited to queues Q1, Q2…; name is
// "" when none is given. Its errors never hold the secret.
func parseItem(item string) (name string, scope Scope, queues []string, secret string, err error) {
	head, secret, ok := strings.Cut(item, ":")
	if !ok {
		return "", None, nil, "", fmt.Errorf("want [NAME=]SCOPE:SECRET, such as %s", example)
	}
	sc := head
	if n, s, named := strings.Cut(head, "="); named {
		name, sc = strings.TrimSpace(n), s
		if err := checkGivenName(name); err != nil {
			return "", None, nil, "", err
		}
	}
	sc, qs, limited := strings.Cut(sc, "/")
	if scope, err = ParseScope(sc); err != nil {
		return "", None, nil, "", err
	}
	if limited {
		if scope != Worker {
			return "", None, nil, "", fmt.Errorf("scope %q: only a worker token is limited to queues (worker/QUEUE/QUEUE…)", strings.TrimSpace(sc))
		}
		for _, q := range strings.Split(qs, "/") {
			if q = strings.TrimSpace(q); q == "" {
				return "", None, nil, "", fmt.Errorf("worker/QUEUE/QUEUE…: an empty queue name")
			}
			queues = append(queues, q)
		}
	}
	return name, scope, queues, strings.TrimSpace(secret), nil
}

// checkGivenName checks a name written in a token spec.
func checkGivenName(name string) error {
	if name == "" || len(name) > maxGivenName {
		return fmt.Errorf("token name %q: want 1 to %d letters, digits, dots, dashes or underscores", name, maxGivenName)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_') {
			return fmt.Errorf("token name %q: %q is not allowed: want letters, digits, dots, dashes or underscores", name, r)
		}
	}
	return nil
}

// place is where an item of a spec stands: its 1-based line, its 1-based
// position on the line (k) and in the spec (n).
type place struct{ line, k, n int }

// parse adds the tokens of text, items separated by commas or newlines,
// blanks and lines starting with # skipped. An item without a name gets
// defaultName(its place); an error is prefixed by where(its place), and
// leaves a as it was.
func (a *Auth) parse(text string, defaultName, where func(place) string) error {
	n, before := 0, len(a.tokens)
	for i, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "#") {
			continue
		}
		k := 0
		for _, item := range strings.Split(l, ",") {
			if item = strings.TrimSpace(item); item == "" {
				continue
			}
			k++
			n++
			at := place{line: i + 1, k: k, n: n}
			name, scope, queues, secret, err := parseItem(item)
			if err == nil {
				if name == "" {
					name = defaultName(at)
				}
				err = a.add(name, secret, scope, queues)
			}
			if err != nil {
				a.tokens = a.tokens[:before]
				return fmt.Errorf("%s: %w", where(at), err)
			}
		}
	}
	return nil
}

// ParseTokens adds the tokens of spec: "NAME=SCOPE:SECRET" or
// "SCOPE:SECRET" items separated by commas or newlines, as the --token
// flag and $HOPPER_TOKENS take them; blank items and lines starting with
// # are skipped. A token without a name is named "#N", N its position
// among a's tokens. An error names the item by its position in spec.
func (a *Auth) ParseTokens(spec string) error {
	return a.parse(spec,
		func(place) string { return "#" + strconv.Itoa(len(a.tokens)+1) },
		func(at place) string { return "token #" + strconv.Itoa(at.n) })
}

// ParseTokensFrom is ParseTokens for a spec that came from source, such
// as "$HOPPER_TOKENS": a token without a name is named "source#N", N its
// position in spec, and errors start with "source #N". Tokens of two
// calls with the same source would have the same default names.
func (a *Auth) ParseTokensFrom(source, spec string) error {
	return a.parse(spec,
		func(at place) string { return source + "#" + strconv.Itoa(at.n) },
		func(at place) string { return source + " #" + strconv.Itoa(at.n) })
}

// LoadFile adds the tokens of a file: one "NAME=SCOPE:SECRET" or
// "SCOPE:SECRET" a line, blank lines and lines starting with # skipped. A
// token without a name is named "FILE:LINE", FILE the file's base name.
// An error names the file and the line.
func (a *Auth) LoadFile(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("tokens file: %w", err)
	}
	base := filepath.Base(path)
	return a.parse(string(b),
		func(at place) string {
			if at.k > 1 { // a line may hold several, separated by commas
				return base + ":" + strconv.Itoa(at.line) + "#" + strconv.Itoa(at.k)
			}
			return base + ":" + strconv.Itoa(at.line)
		},
		func(at place) string { return "tokens file " + path + ": line " + strconv.Itoa(at.line) })
}
