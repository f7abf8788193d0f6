package store

import "time"

// UnixNanos is the time encoding of Hopper's built-in stores: Unix
// nanoseconds, with the zero Time as 0. It covers the years 1678 to 2262;
// job.Job.Validate keeps run-at times within 1970-2200.
func UnixNanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// FromUnixNanos is the inverse of UnixNanos; it returns times in UTC.
func FromUnixNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}
