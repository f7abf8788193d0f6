package hoppertest_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/hoppertest"
)

// printTB stands in for a test's *testing.T in the examples: it prints
// what an assertion reports, and Fatalf ends the goroutine as testing's
// does.
type printTB struct{ testing.TB }

func (printTB) Helper()                           {}
func (printTB) Errorf(format string, args ...any) { fmt.Printf("FAIL: "+format+"\n", args...) }
func (p printTB) Fatalf(format string, args ...any) {
	p.Errorf(format, args...)
	runtime.Goexit()
}

// inTest runs fn as a test body would, with a printTB.
func inTest(fn func(t testing.TB)) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(printTB{})
	}()
	<-done
}

// signUp is the code under test: it enqueues a welcome email.
func signUp(ctx context.Context, c *hopper.Client, addr string) error {
	_, err := c.Enqueue(ctx, "email", email{To: addr, Subject: "Welcome"}, &hopper.EnqueueOptions{UniqueKey: "welcome:" + addr})
	return err
}

// RequireEnqueued checks that the code under test enqueued one job with
// these args and options, and says what it found when it did not.
func ExampleRequireEnqueued() {
	ws := hopper.NewWorkers()
	hopper.Register(ws, "email", func(ctx context.Context, e email) (any, error) { return nil, nil }, nil)
	c, _ := hopper.NewClient(hopper.Config{Workers: ws})
	defer c.StopNow()
	if err := signUp(context.Background(), c, "ada@example.com"); err != nil {
		panic(err)
	}
	inTest(func(t testing.TB) {
		j := hoppertest.RequireEnqueued(t, c, hoppertest.Expect{Kind: "email",
			Args: email{To: "ada@example.com", Subject: "Welcome"}, UniqueKey: "welcome:ada@example.com"})
		fmt.Println("found job", j.ID)

		hoppertest.RequireEnqueued(t, c, hoppertest.Expect{Kind: "email", Args: email{To: "bob@example.com", Subject: "Welcome"}})
	})
	// Output:
	// found job 1
	// FAIL: hoppertest.RequireEnqueued: no job matches kind "email" with args {"to":"bob@example.com","subject":"Welcome"}; 1 job of the kind: [job 1: args is {"to":"ada@example.com","subject":"Welcome"}, want {"to":"bob@example.com","subject":"Welcome"}]
}

// RequireManyEnqueued checks the jobs of some kinds, in enqueue order;
// RequireNotEnqueued that no job matches.
func ExampleRequireManyEnqueued() {
	ws := hopper.NewWorkers()
	hopper.Register(ws, "resize", func(ctx context.Context, size int) (any, error) { return nil, nil }, nil)
	c, _ := hopper.NewClient(hopper.Config{Workers: ws})
	defer c.StopNow()
	for _, size := range []int{64, 256} {
		if _, err := c.Enqueue(context.Background(), "resize", size, nil); err != nil {
			panic(err)
		}
	}
	inTest(func(t testing.TB) {
		hoppertest.RequireManyEnqueued(t, c, hoppertest.Expect{Kind: "resize", Args: 64}, hoppertest.Expect{Kind: "resize", Args: 256})
		hoppertest.RequireNotEnqueued(t, c, hoppertest.Expect{Kind: "resize", Args: 1024})
		fmt.Println("both pass")

		hoppertest.RequireManyEnqueued(t, c, hoppertest.Expect{Kind: "resize", Args: 256}, hoppertest.Expect{Kind: "resize", Args: 64})
	})
	// Output:
	// both pass
	// FAIL: hoppertest.RequireManyEnqueued: job 1 of 2 (ID 1) does not match kind "resize" with args 256: args is 64, want 256
}

// A Worker runs one job through its handler at a given time and returns it
// as the attempt left it: here a failure, retried after the backoff.
func ExampleWorker_Work() {
	ws := hopper.NewWorkers()
	hopper.Register(ws, "charge", func(ctx context.Context, cents int) (any, error) {
		if cents > 10_000 {
			return nil, errors.New("over the limit")
		}
		return "charged", nil
	}, nil)
	w := hoppertest.NewWorker(ws, hopper.Config{})
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	inTest(func(t testing.TB) {
		j := w.Work(t, "charge", 500, nil, now)
		fmt.Println(j.State, string(j.Result))
		j = w.Work(t, "charge", 50_000, &hopper.EnqueueOptions{MaxAttempts: 2}, now)
		fmt.Println(j.State, j.LastError, j.Attempt, "of", j.MaxAttempts)
	})
	// Output:
	// completed "charged"
	// retrying over the limit 1 of 2
}
