package cli

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/spf13/cobra"
)

// helpWidth is the width the commands' long help is wrapped at.
const helpWidth = 78

// TestHelpWrapped: every command's long help is wrapped as one text:
// no prose line is wider than helpWidth, and none ends where the next
// line's first word would still have fitted (a line left ragged by an
// edit; a sentence may end a line). Indented lines (examples, lists) are left as written.
func TestHelpWrapped(t *testing.T) {
	t.Parallel()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		lines := strings.Split(c.Long, "\n")
		for i, l := range lines {
			prose := l != "" && !strings.HasPrefix(l, " ")
			if prose && utf8.RuneCountInString(l) > helpWidth {
				t.Errorf("%s: line %d is %d wide (over %d): %q", c.CommandPath(), i+1, utf8.RuneCountInString(l), helpWidth, l)
			}
			if !prose || strings.HasSuffix(l, ".") || i+1 == len(lines) || lines[i+1] == "" || strings.HasPrefix(lines[i+1], " ") {
				continue
			}
			next, _, _ := strings.Cut(lines[i+1], " ")
			if w := utf8.RuneCountInString(l) + 1 + utf8.RuneCountInString(next); w <= helpWidth-8 {
				t.Errorf("%s: line %d ends early: %q (the next line's %q fits)", c.CommandPath(), i+1, l, next)
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk((&app{}).root())
}
