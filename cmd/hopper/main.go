// Command hopper is Hopper's command-line program: it serves, enqueues,
// inspects and benchmarks jobs in a SQLite file. Run "hopper --help", or
// "hopper demo" for a first look. See docs/cli.md.
package main

import (
	"os"

	"github.com/hopperq/hopper/internal/cli"
)

func main() { os.Exit(cli.Main()) }
