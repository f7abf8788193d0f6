package wire

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/job"
)

// Schedule is a schedule request: POST /api/v1/schedules and the flags of
// schedule add.
type Schedule struct {
	Name       string    `json:"name"`
	Cron       *string   `json:"cron"`
	TimeZone   *string   `json:"time_zone"`
	Every      *Duration `json:"every"`
	FixedDelay bool      `json:"fixed_delay"`
	Overlap    *string   `json:"overlap"`
	CatchUp    *string   `json:"catch_up"`
	// CatchUpWindow and CatchUpMax bound catch_up all.
	CatchUpWindow *Duration `json:"catch_up_window"`
	CatchUpMax    int       `json:"catch_up_max"`
	Jitter        *Duration `json:"jitter"`
	JitterMode    *string   `json:"jitter_mode"`
	// OutputRetention keeps the outputs of the newest succeeded and
	// failed runs, none older than max_age (docs/logs.md).
	OutputRetention *OutputRetention `json:"output_retention"`
	Replace         bool             `json:"replace"`
	Kind            string           `json:"kind"`
	Args            json.RawMessage  `json:"args"`
	Options

	// Monitor is the schedule's monitor (job.Monitor's JSON).
	Monitor *hopper.Monitor `json:"monitor"`
}

// ScheduleOptions checks s and returns the options it describes, for
// AddSchedule(s.Name, …). Its *job.FieldError names the field; the rules
// of the schedule itself (cron or every, every at least 1s, a zone for
// cron only and agreeing with the expression's) are AddSchedule's.
func (s *Schedule) ScheduleOptions() (hopper.ScheduleOptions, error) {
	o := hopper.ScheduleOptions{FixedDelay: s.FixedDelay, Replace: s.Replace, Kind: s.Kind}
	if strings.TrimSpace(s.Name) == "" {
		return o, job.Invalid("name", "missing: a schedule needs a name")
	}
	if strings.TrimSpace(s.Kind) == "" {
		return o, job.Invalid("kind", "missing: the kind of the jobs the schedule fires")
	}
	if s.Cron != nil {
		if err := Given("cron", strings.TrimSpace(*s.Cron) == "", ""); err != nil {
			return o, err
		}
		o.Cron = *s.Cron
	}
	if s.TimeZone != nil {
		if err := Given("time_zone", strings.TrimSpace(*s.TimeZone) == "", "UTC"); err != nil {
			return o, err
		}
		o.TimeZone = *s.TimeZone
	}
	if s.Every != nil {
		if err := Given("every", s.Every.D() <= 0, "", s.Every.D()); err != nil {
			return o, err
		}
		o.Every = s.Every.D()
	}
	if s.Overlap != nil {
		if err := o.Overlap.UnmarshalText([]byte(*s.Overlap)); err != nil {
			return o, job.Invalid("overlap", "%q: want skip (the default), allow, cancel, terminate, buffer-one or buffer-all", *s.Overlap)
		}
	}
	if s.CatchUp != nil {
		if err := o.CatchUp.UnmarshalText([]byte(*s.CatchUp)); err != nil {
			return o, job.Invalid("catch_up", "%q: want one (the default), none, latest or all", *s.CatchUp)
		}
	}
	if s.CatchUpWindow != nil {
		if err := Given("catch_up_window", s.CatchUpWindow.D() <= 0, "", s.CatchUpWindow.D()); err != nil {
			return o, err
		}
		o.CatchUpWindow = s.CatchUpWindow.D()
	}
	o.CatchUpMax = s.CatchUpMax
	if s.Jitter != nil {
		if err := Given("jitter", s.Jitter.D() <= 0, "", s.Jitter.D()); err != nil {
			return o, err
		}
		o.Jitter = s.Jitter.D()
	}
	if s.JitterMode != nil {
		if err := o.JitterMode.UnmarshalText([]byte(*s.JitterMode)); err != nil {
			return o, job.Invalid("jitter_mode", "%q: want random (the default) or stable", *s.JitterMode)
		}
	}
	if s.Monitor != nil {
		if err := s.Monitor.Check("monitor"); err != nil {
			return o, err
		}
		o.Monitor = s.Monitor.Clone()
	}
	if r := s.OutputRetention; r != nil {
		o.OutputRetention = job.OutputRetention{Succeeded: r.Succeeded, Failed: r.Failed}
		if r.MaxAge != nil {
			if err := Given("output_retention.max_age", r.MaxAge.D() <= 0, "", r.MaxAge.D()); err != nil {
				return o, err
			}
			o.OutputRetention.MaxAge = r.MaxAge.D()
		}
	}
	eo, err := s.Options.options()
	if err != nil {
		return o, err
	}
	o.Options = eo
	if len(s.Args) > 0 && string(s.Args) != "null" {
		o.Args = s.Args // kept byte for byte
	}
	return o, nil
}

// Backfill is a backfill request: POST /api/v1/schedules/{name}/backfill
// and the flags of schedule backfill.
type Backfill struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// Range reads b's times (RFC 3339, both required) for BackfillSchedule;
// its *job.FieldError names from or to.
func (b *Backfill) Range() (from, to time.Time, err error) {
	if strings.TrimSpace(b.From) == "" {
		return from, to, job.Invalid("from", "missing: the first tick time to backfill, such as 2030-01-02T15:04:05Z")
	}
	if strings.TrimSpace(b.To) == "" {
		return from, to, job.Invalid("to", "missing: the last tick time to backfill, such as 2030-01-02T15:04:05Z")
	}
	if from, err = ParseTime("from", b.From); err != nil {
		return from, to, err
	}
	to, err = ParseTime("to", b.To)
	return from, to, err
}

// OutputRetention is a schedule request's output_retention: how many of
// its runs' outputs are kept (0: the default; negative: none), and for
// how long.
type OutputRetention struct {
	Succeeded int       `json:"succeeded"`
	Failed    int       `json:"failed"`
	MaxAge    *Duration `json:"max_age"`
}
