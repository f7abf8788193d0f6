// Package cputime reads the CPU time the process has used, for the
// benchmarks: other load on the machine changes it far less than the wall
// time.
package cputime
