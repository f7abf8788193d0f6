package kinds

import (
	"context"
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// helperEnv, when set, makes the test binary a helper "server" process
// (see helperServer): "supervised" calls Supervise first, as a program
// should; "direct" does not.
const helperEnv = "HOPPER_KINDS_TEST_SERVER"

// secretEnv is a variable TestMain sets in this test process, standing for
// a server's secret: no command may see it.
const secretEnv = "HOPPER_KINDS_TEST_SECRET"

// TestMain calls Supervise first, as a program running exec jobs must, so
// that this test binary also serves as the supervisor of the commands its
// tests run (Exec starts /proc/self/exe). It then runs the tests, failing
// the package if a test leaves a goroutine behind, or acts as a helper
// server. It sets secretEnv, which no command may see.
func TestMain(m *testing.M) {
	mode := os.Getenv(helperEnv)
	if mode != "direct" {
		Supervise() // a supervisor process exits here
	}
	if mode != "" {
		helperServer()
	}
	os.Setenv(secretEnv, "s3cret") // no command may see it
	goleak.VerifyTestMain(m)
}

// helperServer stands for a hopper server: it runs an exec job, sh -c
// os.Args[1] with os.Args[2:] as arguments, and waits for it; the test
// kills it meanwhile.
func helperServer() {
	os.Unsetenv(helperEnv)
	_, err := Exec(context.Background(), ExecArgs{Command: "sh", Args: append([]string{"-c"}, os.Args[1:]...)})
	fmt.Fprintf(os.Stderr, "helper server: Exec returned: %v\n", err)
	os.Exit(3)
}
