package crontab_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/crontab"
	"github.com/hopperq/hopper/kinds"
	"github.com/hopperq/hopper/store/memstore"
)

// Example imports a crontab into a client's schedules: a dry run first,
// then the import, then again, which changes nothing.
func Example() {
	ctx := context.Background()
	ws := hopper.NewWorkers()
	kinds.Register(ws)
	c, err := hopper.NewClient(hopper.Config{Store: memstore.New(), Workers: ws})
	if err != nil {
		panic(err)
	}
	defer c.StopNow()

	const src = `SHELL=/bin/bash
CRON_TZ=Europe/Berlin
*/15 * * * * /opt/app/bin/sync --quiet >/dev/null 2>&1
@daily mail -s report ops%Good morning,%the report is attached.
@reboot /opt/app/bin/warm-cache
`
	tab, err := crontab.Parse(strings.NewReader(src), crontab.Options{})
	if err != nil {
		panic(err)
	}
	for _, p := range tab.Problems {
		fmt.Printf("line %d not imported: %.50s…\n", p.Line, p.Reason)
	}
	for _, dry := range []bool{true, false, false} {
		changes, err := crontab.Import(ctx, c, tab, crontab.ImportOptions{DryRun: dry})
		if err != nil {
			panic(err)
		}
		for _, ch := range changes {
			fmt.Printf("dry run %v: %s %s (%s in %s)\n", dry, ch.Action, ch.Name, ch.Entry.Cron, ch.Entry.TimeZone)
		}
	}
	a := tab.Entries[1].Args()
	fmt.Printf("%s %q, stdin %q\n", a.Command, a.Args, a.Stdin)
	// Output:
	// line 5 not imported: @reboot runs a command once when the machine boots…
	// dry run true: create cron-sync-quiet (*/15 * * * * in Europe/Berlin)
	// dry run true: create cron-mail-s-report-ops (@daily in Europe/Berlin)
	// dry run false: create cron-sync-quiet (*/15 * * * * in Europe/Berlin)
	// dry run false: create cron-mail-s-report-ops (@daily in Europe/Berlin)
	// dry run false: unchanged cron-sync-quiet (*/15 * * * * in Europe/Berlin)
	// dry run false: unchanged cron-mail-s-report-ops (@daily in Europe/Berlin)
	// /bin/bash ["-c" "mail -s report ops"], stdin "Good morning,\nthe report is attached."
}
