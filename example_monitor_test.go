package hopper_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/hopperq/hopper"
)

// Watch a schedule: its job must start within 30s of its tick. Stepping
// through time (the running client's leader does this by itself), a tick
// that nobody fired opens one incident, with a notification job for the
// channel taking every schedule; the tick's run resolves it.
func Example_monitor() {
	ctx := context.Background()
	ws := hopper.NewWorkers()
	hopper.RegisterRaw(ws, "backup", func(ctx context.Context, _ json.RawMessage) (any, error) { return nil, nil }, nil)
	c, err := hopper.NewClient(hopper.Config{Workers: ws, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	defer c.StopNow()
	if err := c.SetChannel(ctx, hopper.Channel{Name: "ops", Type: "webhook", URL: "https://ops.example.com/hopper", All: true}); err != nil {
		panic(err)
	}
	sc, err := c.AddSchedule(ctx, "backup", hopper.ScheduleOptions{Every: time.Hour, Kind: "backup",
		Monitor: &hopper.Monitor{StartGrace: 30 * time.Second, AlertAfterFailures: 3}})
	if err != nil {
		panic(err)
	}
	late := sc.NextRunAt.Add(time.Minute)
	c.CheckMonitors(ctx, late) // the tick was not fired within 30s
	ins, _ := c.Incidents(ctx, hopper.IncidentFilter{Open: true})
	for _, in := range ins {
		fmt.Println("down:", in.Subject, in.Problem)
	}
	c.FireSchedules(ctx, late) // the tick fires, its job runs
	if _, _, err := c.ProcessNext(ctx, late); err != nil {
		panic(err)
	}
	c.CheckMonitors(ctx, late)
	ins, _ = c.Incidents(ctx, hopper.IncidentFilter{})
	fmt.Println("open:", ins[0].Open())
	notes, _ := c.List(ctx, hopper.ListOptions{Kind: hopper.NotifyKind})
	for _, j := range notes {
		var a hopper.NotifyArgs
		_ = json.Unmarshal(j.Args, &a)
		fmt.Println("notify", a.Channel+":", a.Notification.Event, a.Notification.Status)
	}
	// Output:
	// down: schedule:backup missed_start
	// open: false
	// notify ops: missed_start down
	// notify ops: missed_start up
}
