package hopper_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/backoff"
)

// Register a typed handler, start the client, enqueue a job and wait for its
// result.
func Example() {
	ctx := context.Background()
	ws := hopper.NewWorkers()
	type greet struct {
		Name string `json:"name"`
	}
	hopper.Register(ws, "greet", func(ctx context.Context, args greet) (any, error) {
		return "Hello, " + args.Name + "!", nil
	}, nil)

	c, err := hopper.NewClient(hopper.Config{Workers: ws, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	if err := c.Start(); err != nil {
		panic(err)
	}
	defer c.Stop(ctx)

	res, err := c.Enqueue(ctx, "greet", greet{Name: "Ada"}, nil)
	if err != nil {
		panic(err)
	}
	waitCtx, cancel := context.WithTimeout(ctx, 10*time.Second) // a safety net only
	defer cancel()
	j, err := c.Wait(waitCtx, res.ID)
	if err != nil {
		panic(err)
	}
	fmt.Println(j.State, string(j.Result))
	// Output: completed "Hello, Ada!"
}

// A job that keeps failing is retried until it runs out of attempts, then
// lands in the dead-letter queue, from where RetryDead sends it back. Time is
// stepped explicitly with ProcessNext, so the tiny backoff is never waited
// for.
func Example_retryAndDeadLetter() {
	ctx := context.Background()
	ws := hopper.NewWorkers()
	hopper.RegisterRaw(ws, "charge", func(ctx context.Context, args json.RawMessage) (any, error) {
		return nil, errors.New("card declined")
	}, nil)
	retry := backoff.Fixed(time.Millisecond)
	c, err := hopper.NewClient(hopper.Config{
		Workers: ws, Logger: slog.New(slog.DiscardHandler),
		Defaults: hopper.EnqueueOptions{MaxAttempts: 2, Retry: &retry},
	})
	if err != nil {
		panic(err)
	}
	defer c.Stop(ctx)

	res, err := c.Enqueue(ctx, "charge", map[string]string{"card": "4242"}, nil)
	if err != nil {
		panic(err)
	}
	now := time.Date(2100, time.January, 1, 0, 0, 0, 0, time.UTC)
	j, _, _ := c.ProcessNext(ctx, now)
	fmt.Println("attempt", j.Attempt, j.State)
	j, _, _ = c.ProcessNext(ctx, j.RunAt)
	fmt.Println("attempt", j.Attempt, j.State)

	dead, _ := c.DeadJobs(ctx, 0, 0)
	for _, d := range dead {
		fmt.Printf("dead letter: %s after %d attempts: %s\n", d.Kind, d.Attempt, d.LastError)
	}
	n, _ := c.RetryAllDead(ctx)
	st, _ := c.Status(ctx, res.ID)
	fmt.Println("retried", n, "now", st)
	// Output:
	// attempt 1 retrying
	// attempt 2 dead
	// dead letter: charge after 2 attempts: card declined
	// retried 1 now available
}

// Cancel removes a waiting job; Reschedule moves one, keeping its ID, and
// nothing runs at its old time.
func Example_cancelAndReschedule() {
	ctx := context.Background()
	c, err := hopper.NewClient(hopper.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	defer c.Stop(ctx)

	run := func(name string) hopper.Func {
		return func(context.Context) (any, error) {
			fmt.Println("ran", name)
			return nil, nil
		}
	}
	nine := time.Date(2100, time.January, 1, 9, 0, 0, 0, time.UTC)
	reminder, _ := c.EnqueueFunc(ctx, run("reminder"), &hopper.EnqueueOptions{RunAt: nine})
	report, _ := c.EnqueueFunc(ctx, run("report"), &hopper.EnqueueOptions{RunAt: nine})

	ok, _ := c.Cancel(ctx, reminder.ID)
	fmt.Println("cancelled reminder:", ok)
	j, _ := c.Reschedule(ctx, report.ID, nine.Add(time.Hour), nil)
	fmt.Println("report moved to", j.RunAt.Format("15:04"))

	_, ok, _ = c.ProcessNext(ctx, nine)
	fmt.Println("anything due at 09:00:", ok)
	_, ok, _ = c.ProcessNext(ctx, nine.Add(time.Hour))
	fmt.Println("anything due at 10:00:", ok)
	ok, _ = c.Cancel(ctx, reminder.ID)
	fmt.Println("cancel reminder again:", ok)
	// Output:
	// cancelled reminder: true
	// report moved to 10:00
	// anything due at 09:00: false
	// ran report
	// anything due at 10:00: true
	// cancel reminder again: false
}

// A recurring schedule enqueues an ordinary job at each tick. Stepping with
// FireSchedules and ProcessNext walks through its ticks without waiting.
func Example_recurringSchedule() {
	ctx := context.Background()
	ws := hopper.NewWorkers()
	hopper.RegisterRaw(ws, "cleanup", func(ctx context.Context, args json.RawMessage) (any, error) {
		return "swept", nil
	}, nil)
	c, err := hopper.NewClient(hopper.Config{Workers: ws, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	defer c.Stop(ctx)

	sc, err := c.AddSchedule(ctx, "cleanup", hopper.ScheduleOptions{Every: time.Minute, Kind: "cleanup"})
	if err != nil {
		panic(err)
	}
	at := sc.NextRunAt
	for range 3 {
		next := c.FireSchedules(ctx, at) // enqueues the tick's job
		j, _, _ := c.ProcessNext(ctx, at)
		fmt.Printf("tick +%s: %s %s\n", j.FireTime.Sub(sc.CreatedAt), j.State, j.Result)
		at = next
	}
	// Output:
	// tick +1m0s: completed "swept"
	// tick +2m0s: completed "swept"
	// tick +3m0s: completed "swept"
}

// ProcessNext runs the most urgent job due at the given time in the calling
// goroutine. Backoffs are measured against the times passed in, so a test
// steps through retries instantly.
func Example_stepping() {
	ctx := context.Background()
	ws := hopper.NewWorkers()
	calls := 0
	hopper.RegisterRaw(ws, "sync", func(ctx context.Context, args json.RawMessage) (any, error) {
		calls++
		if calls == 1 {
			return nil, errors.New("upstream timeout")
		}
		return "synced", nil
	}, nil)
	retry := backoff.Fixed(30 * time.Second)
	c, err := hopper.NewClient(hopper.Config{Workers: ws, Logger: slog.New(slog.DiscardHandler), Defaults: hopper.EnqueueOptions{Retry: &retry}})
	if err != nil {
		panic(err)
	}
	defer c.Stop(ctx)
	if _, err := c.Enqueue(ctx, "sync", nil, nil); err != nil {
		panic(err)
	}

	t0 := time.Date(2100, time.January, 1, 12, 0, 0, 0, time.UTC)
	for _, d := range []time.Duration{0, 29 * time.Second, 30 * time.Second, time.Hour} {
		j, ok, err := c.ProcessNext(ctx, t0.Add(d))
		switch {
		case err != nil:
			panic(err)
		case !ok:
			fmt.Printf("t+%s: nothing due\n", d)
		case j.State == hopper.StateRetrying:
			fmt.Printf("t+%s: attempt %d failed (%s), retry at t+%s\n", d, j.Attempt, j.LastError, j.RunAt.Sub(t0))
		default:
			fmt.Printf("t+%s: attempt %d %s %s\n", d, j.Attempt, j.State, j.Result)
		}
	}
	// Output:
	// t+0s: attempt 1 failed (upstream timeout), retry at t+30s
	// t+29s: nothing due
	// t+30s: attempt 2 completed "synced"
	// t+1h0m0s: nothing due
}

// A debounced enqueue merges into the job waiting with its unique key:
// three enqueues within the period give one run, with the last args, a
// period after the last enqueue.
func Example_debounce() {
	ctx := context.Background()
	ws := hopper.NewWorkers()
	hopper.Register(ws, "reindex", func(ctx context.Context, rev int) (any, error) {
		return fmt.Sprintf("indexed revision %d", rev), nil
	}, nil)
	c, err := hopper.NewClient(hopper.Config{Workers: ws, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	defer c.Stop(ctx)
	opts := &hopper.EnqueueOptions{UniqueKey: "reindex:doc-7", Debounce: hopper.Debounce{Period: time.Minute, MaxWait: 10 * time.Minute}}
	for rev := 1; rev <= 3; rev++ {
		res, err := c.Enqueue(ctx, "reindex", rev, opts)
		if err != nil {
			panic(err)
		}
		fmt.Printf("revision %d: job %d, debounced %v\n", rev, res.ID, res.Debounced)
	}
	ran, err := c.RunReady(ctx, time.Now().Add(2*time.Minute))
	if err != nil {
		panic(err)
	}
	for _, j := range ran {
		fmt.Printf("ran job %d: %s\n", j.ID, j.Result)
	}
	// Output:
	// revision 1: job 1, debounced false
	// revision 2: job 1, debounced true
	// revision 3: job 1, debounced true
	// ran job 1: "indexed revision 3"
}

// email is the args of the send_email kind; Register calls its Validate.
type email struct {
	To      string `json:"to"`
	Subject string `json:"subject"`
}

func (e *email) Validate() error {
	if e.To == "" {
		return errors.New("to: a recipient is required")
	}
	return nil
}

// Args that do not fit the kind's type, or that its Validate method rejects,
// are refused at Enqueue with a *FieldError on "args", and nothing is
// stored.
func ExampleRegister_validate() {
	ctx := context.Background()
	ws := hopper.NewWorkers()
	hopper.Register(ws, "send_email", func(ctx context.Context, e email) (any, error) {
		return "sent to " + e.To, nil
	}, nil)
	c, err := hopper.NewClient(hopper.Config{Workers: ws, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	defer c.StopNow()
	for _, args := range []any{
		email{Subject: "Welcome"},
		json.RawMessage(`{"to":"ada@example.com","subjct":"Welcome"}`),
		email{To: "ada@example.com", Subject: "Welcome"},
	} {
		res, err := c.Enqueue(ctx, "send_email", args, nil)
		var fe *hopper.FieldError
		if errors.As(err, &fe) {
			fmt.Printf("refused, field %s: %s\n", fe.Field, fe.Reason)
			continue
		}
		fmt.Println("enqueued job", res.ID)
	}
	// Output:
	// refused, field args: to: a recipient is required
	// refused, field args: args do not fit hopper_test.email: unknown field "subjct"
	// enqueued job 1
}

// Cancel every waiting job of a queue, however many, in batches of
// BulkBatch jobs (each one transaction), with the progress after each
// batch. Jobs enqueued after the call started are left alone.
func ExampleClient_CancelMatching() {
	ctx := context.Background()
	c, err := hopper.NewClient(hopper.Config{Logger: slog.New(slog.DiscardHandler), ExternalKinds: []string{"send_email"}})
	if err != nil {
		panic(err)
	}
	defer c.StopNow()
	reqs := make([]hopper.EnqueueRequest, 2500)
	for i := range reqs {
		reqs[i] = hopper.EnqueueRequest{Kind: "send_email", Options: &hopper.EnqueueOptions{Queue: "newsletter", Delay: time.Hour}}
	}
	if _, err := c.EnqueueMany(ctx, reqs); err != nil {
		panic(err)
	}
	res, err := c.CancelMatching(ctx, hopper.BulkOptions{
		Queue:    "newsletter",
		Progress: func(r hopper.BulkResult) { fmt.Printf("%d of %d\n", r.Done, r.Total) },
	})
	if err != nil {
		panic(err)
	}
	fmt.Println("cancelled:", res.Done)
	// Output:
	// 1000 of 2500
	// 2000 of 2500
	// 2500 of 2500
	// cancelled: 2500
}

// A paused queue's jobs wait, in every process sharing the store, until it
// is resumed; WaitReason says why a job waits. Here the step API shows it.
func ExampleClient_PauseQueue() {
	ctx := context.Background()
	ws := hopper.NewWorkers()
	hopper.RegisterRaw(ws, "send", func(ctx context.Context, args json.RawMessage) (any, error) { return "sent", nil }, nil)
	c, err := hopper.NewClient(hopper.Config{Workers: ws, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	defer c.Stop(ctx)
	res, err := c.Enqueue(ctx, "send", nil, &hopper.EnqueueOptions{Queue: "mail"})
	if err != nil {
		panic(err)
	}
	if err := c.PauseQueue(ctx, "mail"); err != nil {
		panic(err)
	}
	now := time.Date(2100, time.January, 1, 12, 0, 0, 0, time.UTC)
	_, ok, _ := c.ProcessNext(ctx, now)
	j, _ := c.Get(ctx, res.ID)
	why, _ := c.WaitReason(ctx, j)
	fmt.Printf("paused: ran %v, job %s, %s\n", ok, j.State, why)
	if err := c.ResumeQueue(ctx, "mail"); err != nil {
		panic(err)
	}
	j, ok, _ = c.ProcessNext(ctx, now)
	fmt.Printf("resumed: ran %v, job %s %s\n", ok, j.State, j.Result)
	// Output:
	// paused: ran false, job available, queue mail paused
	// resumed: ran true, job completed "sent"
}

// A queue limited to 1 running job across every process sharing the store
// runs its jobs one at a time, whatever the number of workers: a mutex.
func ExampleClient_SetQueueConcurrency() {
	ctx := context.Background()
	var mu sync.Mutex
	running, peak := 0, 0
	ws := hopper.NewWorkers()
	hopper.RegisterRaw(ws, "sync", func(ctx context.Context, args json.RawMessage) (any, error) {
		mu.Lock()
		running++
		peak = max(peak, running)
		mu.Unlock()
		time.Sleep(time.Millisecond)
		mu.Lock()
		running--
		mu.Unlock()
		return nil, nil
	}, nil)
	c, err := hopper.NewClient(hopper.Config{Workers: ws, Concurrency: 8, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	if err := c.SetQueueConcurrency(ctx, "inventory", 1); err != nil {
		panic(err)
	}
	var ids []hopper.ID
	for range 5 {
		res, err := c.Enqueue(ctx, "sync", nil, &hopper.EnqueueOptions{Queue: "inventory"})
		if err != nil {
			panic(err)
		}
		ids = append(ids, res.ID)
	}
	if err := c.Start(); err != nil {
		panic(err)
	}
	for _, id := range ids {
		if _, err := c.Wait(ctx, id); err != nil {
			panic(err)
		}
	}
	if err := c.Stop(ctx); err != nil {
		panic(err)
	}
	fmt.Println("most running at once:", peak)
	// Output:
	// most running at once: 1
}

// Backfill the past ticks of a schedule: each tick's job once, through its
// overlap policy; a repeat finds them all and creates nothing.
func ExampleClient_BackfillSchedule() {
	ctx := context.Background()
	ws := hopper.NewWorkers()
	hopper.RegisterRaw(ws, "report", func(ctx context.Context, _ json.RawMessage) (any, error) { return nil, nil }, nil)
	c, err := hopper.NewClient(hopper.Config{Workers: ws, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	defer c.StopNow()
	if _, err := c.AddSchedule(ctx, "hourly-report", hopper.ScheduleOptions{Cron: "0 * * * *", Kind: "report", Overlap: hopper.OverlapAllow}); err != nil {
		panic(err)
	}
	from, to := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2020, 1, 1, 3, 30, 0, 0, time.UTC)
	for range 2 {
		res, err := c.BackfillSchedule(ctx, "hourly-report", from, to)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%d ticks: %d fired, %d existed\n", res.Ticks, len(res.Fired), res.Existed)
	}
	// Output:
	// 4 ticks: 4 fired, 0 existed
	// 4 ticks: 0 fired, 4 existed
}

// A handler logs through hopper.Logger: its lines are kept with the
// attempt, and read back with Client.Output (hopper jobs output ID
// --stream log, the API and the dashboard show them too).
func ExampleLogger() {
	ctx := context.Background()
	ws := hopper.NewWorkers()
	hopper.RegisterRaw(ws, "import", func(ctx context.Context, _ json.RawMessage) (any, error) {
		log := hopper.Logger(ctx)
		log.Info("fetched", "rows", 120)
		log.Warn("skipped a row", "line", 17)
		fmt.Fprintln(hopper.Stdout(ctx), "120 rows, 1 skipped")
		return nil, nil
	}, nil)
	c, err := hopper.NewClient(hopper.Config{Workers: ws, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	res, err := c.Enqueue(ctx, "import", nil, nil)
	if err != nil {
		panic(err)
	}
	if _, err := c.RunReady(ctx, time.Now()); err != nil {
		panic(err)
	}
	out, err := c.Output(ctx, res.ID, 0)
	if err != nil {
		panic(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out.Log.Data)), "\n") {
		_, rest, _ := strings.Cut(line, " ") // the time
		fmt.Println(rest)
	}
	fmt.Printf("attempt %d, stdout: %s", out.Attempt, out.Stdout.Data)
	// Output:
	// level=INFO msg=fetched rows=120
	// level=WARN msg="skipped a row" line=17
	// attempt 1, stdout: 120 rows, 1 skipped
}
