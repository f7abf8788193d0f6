package cputime

import (
	"bytes"
	"os"
	"strconv"
	"time"
)

// Machine returns the CPU time every CPU of the machine has spent busy so
// far (every process's, a database server's on the same machine
// included), and true; false where the system does not say. It counts in
// the kernel's ticks of 10 ms (USER_HZ): read it around a run of seconds.
func Machine() (time.Duration, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	f := bytes.Fields(line)
	if len(f) < 5 || string(f[0]) != "cpu" {
		return 0, false
	}
	var busy int64
	for i, s := range f[1:] {
		if i == 3 || i == 4 || i >= 7 { // idle, iowait; steal, and guests (counted in user already)
			continue
		}
		n, err := strconv.ParseInt(string(s), 10, 64)
		if err != nil {
			return 0, false
		}
		busy += n
	}
	return time.Duration(busy) * 10 * time.Millisecond, true
}
