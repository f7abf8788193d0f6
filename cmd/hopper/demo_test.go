package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDemoHintsRunAsInvoked runs the demo with the binary by its path, not
// on PATH, and on a database given by --db: the commands it suggests run
// that binary on that database, and they work as printed.
func TestDemoHintsRunAsInvoked(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs it; skipped with -short")
	}
	t.Parallel()
	bin := hopperBin(t)
	db := filepath.Join(t.TempDir(), "demo.db")
	cmd := exec.Command(bin, "--db", db, "demo")
	cmd.Env = append(os.Environ(), "HOPPER_DB=") // --db decides, not the environment
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out)
	}
	again := bin + " --db " + db
	var hint string
	for _, l := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(l, "now try: "); ok {
			hint = rest
		}
	}
	if want := again + " jobs list / " + again + " dlq list"; hint != want {
		t.Fatalf("hint %q, want %q\n%s", hint, want, out)
	}
	words := strings.Fields(strings.Split(hint, " / ")[1]) // the dlq list, as printed
	if out, err := exec.Command(words[0], words[1:]...).CombinedOutput(); err != nil || !strings.Contains(string(out), "exit code 3") {
		t.Errorf("%s: %v\n%s", strings.Join(words, " "), err, out)
	}
}
