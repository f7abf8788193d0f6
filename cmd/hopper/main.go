// Command hopper is Hopper's command-line program: it serves, enqueues,
// inspects and benchmarks jobs in a SQLite file. Run "hopper --help", or
// "hopper demo" for a first look. See docs/cli.md.
//
// The same executable is also the supervisor of each exec job's command
// (see kinds.Supervise and docs/kinds.md): hopper serve starts itself again
// in that role, so that a job's processes die with the server.
package main

import (
	"os"

	"github.com/hopperq/hopper/internal/cli"
	"github.com/hopperq/hopper/kinds"
)

func main() {
	kinds.Supervise() // first: a supervisor runs here and exits
	os.Exit(cli.Main())
}
