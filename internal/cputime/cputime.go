// Package cputime reads the CPU time the process has used, for the
// benchmarks: other load on the machine changes it far less than the wall
// time. Machine reads the whole machine's, a database server's on it
// included: what a job costs end to end, on a machine doing nothing else.
package cputime
