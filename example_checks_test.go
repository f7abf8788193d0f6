package hopper_test

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/job"
)

// Watch a cron line outside Hopper with an external check: the line ends
// with `&& curl -fsS https://hopper.example.com/ping/ID`, which the HTTP
// server (httpapi.NewPing) turns into Client.PingCheck. Stepping through
// time (the running client's leader does this by itself), a ping missing
// beyond the grace opens one check_down incident; the next success ping
// resolves it.
func Example_checks() {
	ctx := context.Background()
	c, err := hopper.NewClient(hopper.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	defer c.StopNow()
	ch, err := c.AddCheck(ctx, "backup", hopper.CheckOptions{Period: 24 * time.Hour, Grace: 30 * time.Minute})
	if err != nil {
		panic(err)
	}
	fmt.Println("ping URL: /ping/ + a", len(ch.PingID), "character secret")
	last := time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)
	if _, _, err := c.PingCheck(ctx, ch.PingID, hopper.Ping{Kind: job.PingSuccess, At: last}); err != nil {
		panic(err)
	}
	ch, _ = c.GetCheck(ctx, "backup")
	fmt.Println(ch.Status(last.Add(time.Hour)), "- due", ch.Due().Format(time.Kitchen), "- down at", ch.DownAt().Format(time.Kitchen))
	c.CheckMonitors(ctx, ch.DownAt()) // no ping came: down
	ins, _ := c.Incidents(ctx, hopper.IncidentFilter{Open: true})
	for _, in := range ins {
		fmt.Println("down:", in.Subject, in.Problem)
	}
	if _, _, err := c.PingCheck(ctx, ch.PingID, hopper.Ping{Kind: job.PingSuccess, At: ch.DownAt().Add(time.Minute)}); err != nil {
		panic(err)
	}
	c.CheckMonitors(ctx, ch.DownAt().Add(time.Minute))
	ins, _ = c.Incidents(ctx, hopper.IncidentFilter{Open: true})
	fmt.Println("open incidents:", len(ins))
	// Output:
	// ping URL: /ping/ + a 22 character secret
	// up - due 3:00AM - down at 3:30AM
	// down: check:backup check_down
	// open incidents: 0
}
