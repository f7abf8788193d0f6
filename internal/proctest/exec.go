package proctest

import (
	"os"
	"syscall"
	"testing"
)

// WriteExecutable writes data to path as an executable (mode 0755) that
// this process will run. It holds syscall.ForkLock from the file's opening
// to its close: a child that a parallel test forked meanwhile would inherit
// the file open for writing until its own exec, and running the file then
// fails with "text file busy" (ETXTBSY; golang/go#22315).
func WriteExecutable(t testing.TB, path string, data []byte) {
	t.Helper()
	syscall.ForkLock.RLock()
	err := os.WriteFile(path, data, 0o755)
	syscall.ForkLock.RUnlock()
	if err != nil {
		t.Fatal(err)
	}
}
