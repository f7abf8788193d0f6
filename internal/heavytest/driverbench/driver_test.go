package driverbench

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/hopperq/hopper/store/sqlitestore"
)

// TestDrivers checks, on each driver, what the benchmarks rely on: the
// store really opens its connections through the driver swapped in (its
// errors are the driver's own), translates them through the driver's
// result codes (a file that is not a database is ErrNotDatabase), and
// enqueues, claims and finishes jobs. The subtests swap the driver, so
// they do not run in parallel.
func TestDrivers(t *testing.T) {
	for _, d := range benchDrivers {
		t.Run(d.name, func(t *testing.T) {
			withDriver(t, d, func(t *testing.T) {
				junk := filepath.Join(t.TempDir(), "junk.db")
				if err := os.WriteFile(junk, bytes.Repeat([]byte("not a database "), 1000), 0o644); err != nil {
					t.Fatal(err)
				}
				s, err := sqlitestore.Open(context.Background(), junk, sqlitestore.Options{})
				if err == nil {
					s.Close()
					t.Fatal("Open of a file that is not a database succeeded")
				}
				if _, ok := d.code(err); !ok || !errors.Is(err, sqlitestore.ErrNotDatabase) {
					t.Fatalf("Open of a file that is not a database: %v; want ErrNotDatabase wrapping an error of %s", err, d.name)
				}

				s = benchOpen(t, sqlitestore.DurabilityNormal)
				benchEnqueue(t, s, benchJobs(10))
				claimed := benchClaim(t, s, 100)
				if len(claimed) != 10 {
					t.Fatalf("claimed %d jobs of 10", len(claimed))
				}
				benchFinish(t, s, claimed)
				if again := benchClaim(t, s, 100); len(again) != 0 {
					t.Fatalf("claimed %d jobs after finishing all of them", len(again))
				}
			})
		})
	}
}
