package crontab

import (
	"strings"
	"testing"
)

// FuzzParse checks that Parse accounts for every line that is not blank,
// a comment or an environment line: each becomes one entry or at least one
// problem, never both; that entries have unique names with the prefix and
// args the exec kind accepts; and that parsing is deterministic.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"*/5 * * * * /usr/bin/backup --full\n", "@daily a\n@reboot b\n", "CRON_TZ=Europe/Berlin\n0 2 * * * x%y%z\n",
		"A = \"b c\"\nSHELL=/bin/bash\nMAILTO=x@y\n@hourly env\n", "61 * * * * x\n", `0 0 * * * date +\%F%in\%put%`,
		"TZ=Mars/Olympus\n@daily a\n", "A='open\n", "@daily run.sh\n@daily run.sh\n@daily run.sh-2\n", "\xff\n\r\n#\n",
	} {
		f.Add(s, false)
	}
	f.Add("@daily root a\n0 0 * * * www b\n", true)
	f.Fuzz(func(t *testing.T, src string, system bool) {
		o := Options{Prefix: "p-", System: system}
		if system {
			o.User = "root"
		}
		tab, err := Parse(strings.NewReader(src), o)
		if err != nil {
			t.Fatal(err)
		}
		again, _ := Parse(strings.NewReader(src), o)
		if len(again.Entries) != len(tab.Entries) || len(again.Problems) != len(tab.Problems) {
			t.Fatal("not deterministic")
		}
		names := map[string]bool{}
		lines := map[int]bool{}
		for i, e := range tab.Entries {
			if names[e.Name] || !strings.HasPrefix(e.Name, "p-") || len(e.Name) > 255 {
				t.Fatalf("entry %d: name %q (duplicate or without the prefix)", i, e.Name)
			}
			if again.Entries[i].Name != e.Name {
				t.Fatalf("entry %d: name %q then %q", i, e.Name, again.Entries[i].Name)
			}
			names[e.Name], lines[e.Line] = true, true
			a := e.Args()
			if err := a.Validate(); err != nil {
				t.Fatalf("entry %d: %v", i, err)
			}
			if strings.TrimSpace(e.Command) == "" || e.Cron == "" {
				t.Fatalf("entry %d: %+v", i, e)
			}
		}
		for _, p := range tab.Problems {
			if lines[p.Line] || p.Reason == "" || p.Line < 1 {
				t.Fatalf("problem %+v: on an entry's line, or without a reason", p)
			}
		}
	})
}
