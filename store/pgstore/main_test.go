package pgstore_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a Store leaves a goroutine behind once
// every test has closed its stores.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
