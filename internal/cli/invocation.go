package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
)

// selfCommand returns how a user runs this program again, for the commands
// that hints suggest (commandFor): the program as it was invoked, not a
// "hopper" that may not be on PATH.
func selfCommand() string {
	exe, err := os.Executable()
	if err != nil {
		exe = ""
	}
	pkg := "github.com/hopperq/hopper/cmd/hopper"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Path != "" {
		pkg = bi.Path
	}
	return commandFor(os.Args[0], exe, pkg, exec.LookPath, os.Stat)
}

// commandFor returns the words that run the program again, given arg0 (the
// name or path it was invoked by), exe (its executable's path), pkg (its
// package path), and how to look a name up in PATH and a file up:
//
//   - the name alone ("hopper") when that name, looked up in PATH, is exe;
//   - under go run, whose executable (in a go-build directory) is deleted
//     when it exits, "go run ./cmd/hopper" when the working directory holds
//     that package, else "go run " + pkg;
//   - otherwise the path it was invoked by ("./hopper", "/opt/hopper/bin/hopper"),
//     or exe if it was found in PATH as another file.
//
// The result is quoted for a shell where it needs to be.
func commandFor(arg0, exe, pkg string, lookPath func(string) (string, error), stat func(string) (os.FileInfo, error)) string {
	name := filepath.Base(arg0)
	if found, err := lookPath(name); err == nil && sameFile(found, exe, stat) {
		return shellQuote([]string{name})
	}
	if goRun(exe) {
		if fi, err := stat(filepath.Join("cmd", "hopper", "main.go")); err == nil && fi.Mode().IsRegular() {
			return "go run ./cmd/hopper"
		}
		return "go run " + pkg
	}
	if strings.ContainsRune(arg0, filepath.Separator) || exe == "" {
		return shellQuote([]string{arg0})
	}
	return shellQuote([]string{exe})
}

// sameFile reports whether the paths a and b name one file.
func sameFile(a, b string, stat func(string) (os.FileInfo, error)) bool {
	if a == "" || b == "" {
		return false
	}
	fa, err := stat(a)
	if err != nil {
		return false
	}
	fb, err := stat(b)
	return err == nil && os.SameFile(fa, fb)
}

// goRun reports whether exe is an executable go run built: the go command
// writes it to $GOTMPDIR/go-buildNNN/bNNN/exe/NAME and deletes it after.
func goRun(exe string) bool {
	dir := filepath.Dir(exe)
	return filepath.Base(dir) == "exe" && strings.HasPrefix(filepath.Base(filepath.Dir(filepath.Dir(dir))), "go-build")
}
