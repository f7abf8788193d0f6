package dashboard

import (
	"fmt"
	"strconv"
	"time"

	"github.com/hopperq/hopper"
)

// The throughput chart: jobs completed and dead per minute over the last
// hour, from the store (Stats.Series: every process sharing it counts),
// drawn on the server as inline SVG (no script, no style attributes: the
// stylesheet colours it).

// bucket is one step of the chart.
type bucket struct {
	Minute       time.Time
	Done, Failed int
}

// bucketsOf returns the steps of st's series, oldest first: completed jobs
// as done, dead ones as failed.
func bucketsOf(st hopper.Stats) []bucket {
	done, dead := st.Series[hopper.StateCompleted], st.Series[hopper.StateDead]
	out := make([]bucket, len(done))
	for i := range out {
		out[i] = bucket{Minute: st.Since.Add(time.Duration(i) * st.Step), Done: done[i]}
		if i < len(dead) {
			out[i].Failed = dead[i]
		}
	}
	return out
}

// chartView is the chart as the template draws it: bars placed across
// the width in percent (the chart takes the width it is given, its text
// unstretched), heights in pixels; the y-axis labels are HTML beside it,
// placed by the stylesheet (classes y0, y1, y2 match plotTop and
// plotBottom).
type chartView struct {
	H            int // the SVG's height
	Bottom       int // the baseline
	LabelY       int // the baseline of the time labels
	Bars         []barView
	Grid         []gridLine
	Labels       []xLabel
	Done, Failed int // totals over the chart
	Since        time.Time
	Empty        bool
	Description  string // for screen readers
	Peak         int    // the most attempts in one minute
}

type barView struct {
	X, W         string // percent of the width
	DoneY, DoneH int
	FailY, FailH int
	Title        string
}

type gridLine struct {
	Y     int
	Label string
	Class string
}

type xLabel struct {
	X      string
	Anchor string
	Label  string
}

// The chart's vertical layout, in pixels (app.css places the y-axis
// labels to match).
const (
	chartHeight = 170
	plotTop     = 8
	plotBottom  = 150
)

// newChart lays out the bars of bs (one a step, oldest first), which begin
// at since.
func newChart(bs []bucket, since time.Time, loc *time.Location) chartView {
	const labelEvery = 15 // minutes
	c := chartView{H: chartHeight, Bottom: plotBottom, LabelY: chartHeight - 4, Since: since}
	for _, b := range bs {
		c.Done += b.Done
		c.Failed += b.Failed
		c.Peak = max(c.Peak, b.Done+b.Failed)
	}
	c.Empty = c.Peak == 0
	top := niceCeil(c.Peak)
	plotH := plotBottom - plotTop
	scale := func(n int) int {
		if n <= 0 {
			return 0
		}
		return max(1, n*plotH/top)
	}
	step := 100 / float64(max(len(bs), 1))
	pct := func(f float64) string { return strconv.FormatFloat(f, 'f', 3, 64) + "%" }
	for i, b := range bs {
		dh, fh := scale(b.Done), scale(b.Failed)
		bar := barView{X: pct(float64(i)*step + step*0.12), W: pct(step * 0.76), DoneH: dh, FailH: fh}
		bar.DoneY = plotBottom - dh
		bar.FailY = bar.DoneY - fh
		bar.Title = fmt.Sprintf("%s: %s completed, %s dead", b.Minute.In(loc).Format("15:04"), num(b.Done), num(b.Failed))
		c.Bars = append(c.Bars, bar)
		if (len(bs)-1-i)%labelEvery == 0 {
			l := xLabel{X: pct((float64(i) + 0.5) * step), Anchor: "middle", Label: b.Minute.In(loc).Format("15:04")}
			if i == len(bs)-1 {
				l.X, l.Anchor, l.Label = "100%", "end", "now"
			}
			c.Labels = append(c.Labels, l)
		}
	}
	for f := range 3 {
		v := top * f / 2
		c.Grid = append(c.Grid, gridLine{Y: plotBottom - v*plotH/top, Label: num(v), Class: "y" + strconv.Itoa(f)})
	}
	c.Description = fmt.Sprintf("Jobs finished per minute over the last hour: %s completed, %s dead; at most %s in a minute.",
		num(c.Done), num(c.Failed), num(c.Peak))
	return c
}

// niceCeil returns the least of 2, 4, 10, 20, 40, 100… (2, 4 or 10 times
// a power of ten: even, so that the middle grid line is whole) at or
// above n.
func niceCeil(n int) int {
	for m := 1; ; m *= 10 {
		for _, f := range []int{2, 4, 10} {
			if f*m >= n {
				return f * m
			}
		}
	}
}
