package main

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// unitFile is the hardened systemd unit that docs/security.md's checklist
// points to.
const unitFile = "../../examples/systemd/hopper.service"

// execStart returns the arguments of the unit's ExecStart, its
// continuation lines joined, without the program.
func execStart(t *testing.T, unit string) []string {
	t.Helper()
	joined := strings.ReplaceAll(unit, "\\\n", " ")
	m := regexp.MustCompile(`(?m)^ExecStart=(\S+)\s+(.*)$`).FindStringSubmatch(joined)
	if m == nil || m[1] != "/usr/local/bin/hopper" {
		t.Fatalf("%s: no ExecStart=/usr/local/bin/hopper ...", unitFile)
	}
	return strings.Fields(m[2])
}

// TestSystemdUnit: the example unit's command line starts a server that
// answers at the public name it allows with a token of its tokens file,
// and systemd-analyze finds nothing to say about the unit.
func TestSystemdUnit(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(unitFile)
	if err != nil {
		t.Fatal(err)
	}
	args := execStart(t, string(b))
	if len(args) < 1 || args[0] != "serve" {
		t.Fatalf("ExecStart runs %v, want hopper serve", args)
	}
	c := newEdge(t)
	creds := t.TempDir()
	if err := os.WriteFile(filepath.Join(creds, "tokens"), []byte("ops=admin:"+edgeAdmin+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The unit's flags, but the address (a free port) and the number of
	// workers, which the test's server sets; %d is systemd's credentials
	// directory.
	var flags []string
	for i := 1; i < len(args); i++ {
		switch args[i] {
		case "--http", "--workers":
			i++
			continue
		}
		flags = append(flags, strings.ReplaceAll(args[i], "%d", creds))
	}
	w := c.serveWeb(flags...)
	w.want(t, "GET", "/api/v1/jobs", "", http.Header{"Authorization": {"Bearer " + edgeAdmin}, "Host": {"hopper.example.com"}}, 200)
	w.want(t, "GET", "/api/v1/jobs", "", http.Header{"Authorization": {"Bearer " + edgeAdmin}, "Host": {"other.example.com"}}, 421)

	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("systemd-analyze is not installed: CI needs it to check the example unit (.ci/run installs systemd)")
		}
		t.Skip("systemd-analyze is not installed: the example unit is not verified")
	}
	unit := filepath.Join(t.TempDir(), "hopper.service")
	os.WriteFile(unit, []byte(strings.ReplaceAll(string(b), "/usr/local/bin/hopper", c.bin)), 0o644)
	out, err := exec.Command(analyze, "verify", unit).CombinedOutput()
	if err != nil || len(out) > 0 {
		t.Errorf("systemd-analyze verify %s: %v\n%s", unitFile, err, out)
	}
}
