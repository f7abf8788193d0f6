package httpapi

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/httpauth"
)

// TestPythonClient drives the API from a program in another language: a
// Python script using the standard library only (testdata/api_client.py).
func TestPythonClient(t *testing.T) {
	t.Parallel()
	python, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("python3 is not on PATH (CI is set: the test must run)")
		}
		t.Skip("python3 is not on PATH: skipping the Python client test")
	}
	var auth httpauth.Auth
	if err := auth.Add("py", writeToken, httpauth.Write); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, envOpts{store: "sqlite", auth: &auth})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, err := exec.CommandContext(ctx, python, filepath.Join("testdata", "api_client.py"), e.srv.URL, writeToken).CombinedOutput()
	if err != nil || !strings.HasSuffix(strings.TrimSpace(string(out)), "\nok") {
		t.Fatalf("api_client.py: %v\n%s", err, out)
	}
	if n, _ := e.c.Count(ctx, hopper.ListOptions{Queue: "py"}); n != 2 {
		t.Errorf("%d jobs in queue py, want 2", n)
	}
}
