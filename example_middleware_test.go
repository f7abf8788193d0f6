package hopper_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hopperq/hopper"
)

// Middleware set on the client applies to every job; Workers.Use adds a
// kind's own, inside the client's. Here an enqueue middleware refuses jobs
// during a freeze and raises the priority of another, a work middleware
// times each attempt, and a Dead hook alerts.
func ExampleMiddleware() {
	ctx := context.Background()
	ws := hopper.NewWorkers()
	hopper.RegisterRaw(ws, "invoice", func(ctx context.Context, args json.RawMessage) (any, error) {
		return nil, hopper.Permanent(errors.New("customer unknown"))
	}, nil)
	frozen := false
	ws.Use("invoice", hopper.Middleware{
		Enqueue: func(ctx context.Context, r *hopper.EnqueueRequest) (func(hopper.EnqueueResult, error), error) {
			if frozen {
				return nil, errors.New("invoicing is frozen")
			}
			r.Options.Priority = -5 // invoices first
			return nil, nil
		},
	})
	timing := hopper.Middleware{
		Work: func(ctx context.Context, j *hopper.Job, next func(context.Context) error) error {
			start := time.Now()
			err := next(ctx)
			_ = time.Since(start) // to a histogram of j.Kind
			return err
		},
		Dead: func(j *hopper.Job) { fmt.Printf("alert: job %d (%s) is dead: %s\n", j.ID, j.Kind, j.LastError) },
	}
	c, err := hopper.NewClient(hopper.Config{Workers: ws, Middleware: []hopper.Middleware{timing},
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	res, _ := c.Enqueue(ctx, "invoice", nil, nil)
	j, _ := c.Get(ctx, res.ID)
	fmt.Println("priority", j.Priority)
	c.ProcessNext(ctx, time.Now())
	frozen = true
	_, err = c.Enqueue(ctx, "invoice", nil, nil)
	fmt.Println(err)
	// Output:
	// priority -5
	// alert: job 1 (invoice) is dead: permanent: customer unknown
	// invoicing is frozen
}
