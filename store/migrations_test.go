package store

import (
	"strings"
	"testing"
	"testing/fstest"
)

func TestReadMigrations(t *testing.T) {
	t.Parallel()
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	ms, err := ReadMigrations(fstest.MapFS{
		"m/0002_b.sql": file("B"), "m/0010_j.sql": file("J"), "m/0001_a.sql": file("A"),
		"m/0003_c.sql": file("C"), "m/0004_d.sql": file("D"), "m/0005_e.sql": file("E"), "m/0006_f.sql": file("F"),
		"m/0007_g.sql": file("G"), "m/0008_h.sql": file("H"), "m/0009_i.sql": file("I"),
	}, "m")
	if err != nil {
		t.Fatal(err)
	}
	var got strings.Builder
	for i, m := range ms {
		if m.Version != i+1 {
			t.Errorf("migration %d has version %d", i, m.Version)
		}
		got.WriteString(m.SQL)
	}
	if got.String() != "ABCDEFGHIJ" || ms[9].Name != "0010_j.sql" {
		t.Errorf("order: %s, last %s", got.String(), ms[9].Name)
	}
	for name, fsys := range map[string]fstest.MapFS{
		"a gap":       {"m/0001_a.sql": file("A"), "m/0003_c.sql": file("C")},
		"a repeat":    {"m/0001_a.sql": file("A"), "m/0001_b.sql": file("B")},
		"a bad name":  {"m/init.sql": file("A")},
		"version 0":   {"m/0000_a.sql": file("A")},
		"no such dir": {"x/0001_a.sql": file("A")},
	} {
		if _, err := ReadMigrations(fsys, "m"); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
