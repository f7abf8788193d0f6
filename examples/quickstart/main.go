// Command quickstart is the README's quick start, kept compiling: it
// registers two kinds, opens the durable SQLite store, enqueues a job and
// waits for it, adds a recurring schedule, and serves until interrupted,
// then stops gracefully.
//
//	go run ./examples/quickstart
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/hopperq/hopper"
	_ "github.com/hopperq/hopper/store/sqlitestore" // registers "sqlite:"
)

// Email is the args of a send_email job.
type Email struct {
	To      string `json:"to"`
	Subject string `json:"subject"`
}

func main() {
	ws := hopper.NewWorkers()
	hopper.Register(ws, "send_email", func(ctx context.Context, e Email) (any, error) {
		if e.To == "" {
			return nil, hopper.Permanent(errors.New("no recipient")) // straight to the dead-letter queue
		}
		log.Printf("sending %q to %s", e.Subject, e.To) // an error returned here is retried with backoff
		return "sent", nil
	}, nil)
	hopper.Register(ws, "report", func(ctx context.Context, _ struct{}) (any, error) {
		log.Print("building the nightly report")
		return nil, nil
	}, &hopper.EnqueueOptions{Queue: "reports", MaxAttempts: 3}) // the kind's defaults

	ctx := context.Background()
	client, err := hopper.Open(ctx, "sqlite:quickstart.db", hopper.Config{Workers: ws})
	if err != nil {
		log.Fatal(err)
	}
	if err := client.Start(); err != nil {
		log.Fatal(err)
	}

	// The unique key dedupes only while a job holding it waits or runs: a
	// second Enqueue then returns that job (res.Duplicate). Once it has
	// finished the key is free, so each run of this program sends the
	// welcome again.
	res, err := client.Enqueue(ctx, "send_email", Email{To: "ada@example.com", Subject: "Welcome"},
		&hopper.EnqueueOptions{Priority: -10, UniqueKey: "welcome:ada"})
	if err != nil {
		log.Fatal(err)
	}
	job, err := client.Wait(ctx, res.ID) // completed, cancelled or dead
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("job %d: %s, result %s\n", job.ID, job.State, job.Result)

	if _, err := client.AddSchedule(ctx, "nightly-report", hopper.ScheduleOptions{
		Cron: "0 2 * * 1-5", TimeZone: "Europe/Berlin", Kind: "report", Replace: true,
	}); err != nil {
		log.Fatal(err)
	}

	// Serve until Ctrl-C or SIGTERM, then stop gracefully: Stop gets a
	// context of its own, so running jobs have 30 seconds to finish.
	sig, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Println("serving; Ctrl-C to stop")
	<-sig.Done()
	shutdown, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := client.Stop(shutdown); err != nil {
		log.Fatal(err)
	}
}
