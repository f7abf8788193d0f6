package sqlitestore

// CountsDiff is countsDiff, for the tests of package sqlitestore_test.
var CountsDiff = countsDiff

// KeylessReads returns how many keyless reads (sqlKeylessJobs) the
// Store's keyed claims have made.
func KeylessReads(s *Store) int64 { return s.w.keyless.reads.Load() }

// CheckKeyless makes the Store's keyed claims read the keyless jobs even
// where a hint says there are none, and fail if they find one.
func CheckKeyless(s *Store) { s.w.keyless.check.Store(true) }
