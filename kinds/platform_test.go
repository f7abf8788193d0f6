package kinds

import (
	"context"
	"runtime"
	"strings"
	"testing"

	"github.com/hopperq/hopper"
)

// TestExecUnsupportedError checks the error of an exec job run where
// commands cannot run (Windows): permanent, naming the kind and the
// system.
func TestExecUnsupportedError(t *testing.T) {
	t.Parallel()
	err := execUnsupported("windows")
	if !hopper.IsPermanent(err) || !strings.Contains(err.Error(), "exec kind: not supported on windows") {
		t.Fatalf("execUnsupported(windows) = %v (permanent: %t); want a permanent error saying exec kind: not supported on windows", err, hopper.IsPermanent(err))
	}
}

// TestExecOnThisSystem checks that Exec runs a command where ExecSupported
// says it can, and fails permanently with execUnsupported's error where it
// cannot; bad args are refused first either way.
func TestExecOnThisSystem(t *testing.T) {
	t.Parallel()
	if _, err := Exec(context.Background(), ExecArgs{}); !hopper.IsPermanent(err) || !strings.Contains(err.Error(), "command must not be empty") {
		t.Fatalf("Exec of no command: %v; want the permanent error of Validate", err)
	}
	res, err := Exec(context.Background(), ExecArgs{Command: "sh", Args: []string{"-c", "echo hi"}})
	if !ExecSupported {
		if res != nil || err == nil || err.Error() != execUnsupported(runtime.GOOS).Error() || !hopper.IsPermanent(err) {
			t.Fatalf("Exec on %s = %v, %v; want no result and %v", runtime.GOOS, res, err, execUnsupported(runtime.GOOS))
		}
		return
	}
	if err != nil || res.StdoutTail != "hi\n" {
		t.Fatalf("Exec of echo hi = %+v, %v; want hi", res, err)
	}
}
