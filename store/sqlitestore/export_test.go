package sqlitestore

// CountsDiff is countsDiff, for the tests of package sqlitestore_test.
var CountsDiff = countsDiff
