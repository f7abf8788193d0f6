package dashboard

import (
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hopperq/hopper"
)

// TestRescheduleFormNamesItsZone: the reschedule form names the zone it
// shows the run time in — an IANA name, or a UTC offset for a zone Go
// knows no name of (time.Local) — never "Local", and reads the time it is
// sent in the zone the form names.
func TestRescheduleFormNamesItsZone(t *testing.T) {
	t.Parallel()
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		loc      *time.Location
		wantZone string // "" : the offset of time.Local at the run time
		in       string // a run time sent back in the form's zone...
		want     time.Time
	}{
		{"local", time.Local, "", "", time.Time{}},
		{"unnamed offset", time.FixedZone("", 5*3600+30*60), "UTC+05:30", "2030-01-02T10:00", time.Date(2030, 1, 2, 4, 30, 0, 0, time.UTC)},
		{"IANA, winter", berlin, "Europe/Berlin", "2030-01-02T10:00", time.Date(2030, 1, 2, 9, 0, 0, 0, time.UTC)},
		{"IANA, summer", berlin, "Europe/Berlin", "2030-07-02T10:00", time.Date(2030, 7, 2, 8, 0, 0, 0, time.UTC)},
		{"UTC", time.UTC, "UTC", "2030-01-02T10:00", time.Date(2030, 1, 2, 10, 0, 0, 0, time.UTC)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, Options{Location: tc.loc})
			id := e.enqueue("ok", &hopper.EnqueueOptions{RunAt: time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)})
			page := "/jobs/" + strconv.FormatInt(int64(id), 10)
			body := e.get(page, "").want(t, 200).body
			want := tc.wantZone
			if want == "" { // time.Local: named when TZ names it, else its offset
				_, off := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC).In(time.Local).Zone()
				if want = time.Local.String(); want == "Local" {
					want = offsetName(off)
				}
			}
			if strings.Contains(body, "Local") {
				t.Errorf("the job page says Local:\n%s", clip(body))
			}
			m := regexp.MustCompile(`<input type="hidden" name="zone" value="([^"]*)">\s*<label>Run at <small class="muted">\(([^)]*)\)</small>`).FindStringSubmatch(body)
			if m == nil || html.UnescapeString(m[1]) != want || html.UnescapeString(m[2]) != want {
				t.Fatalf("the form names its zone %q, want %q", m, want)
			}
			in, wantAt := tc.in, tc.want
			if in == "" { // time.Local: an hour later than shown, in the offset named
				shown := regexp.MustCompile(`name="run_at_was" value="([^"]*)"`).FindStringSubmatch(body)[1]
				at, err := time.ParseInLocation(datetimeLocal, shown, mustZone(t, want))
				if err != nil {
					t.Fatal(err)
				}
				wantAt = at.Add(time.Hour)
				in = wantAt.In(mustZone(t, want)).Format(datetimeLocal)
			}
			e.post(page+"/reschedule", "", url.Values{"run_at": {in}, "zone": {want}}).want(t, http.StatusSeeOther)
			if got := e.job(id).RunAt; !got.Equal(wantAt) {
				t.Errorf("%s in %s: run at %v, want %v", in, want, got.UTC(), wantAt.UTC())
			}
		})
	}

	t.Run("another zone named", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, Options{Location: time.UTC})
		id := e.enqueue("ok", &hopper.EnqueueOptions{Delay: time.Hour})
		page := "/jobs/" + strconv.FormatInt(int64(id), 10)
		e.post(page+"/reschedule", "", url.Values{"run_at": {"2030-01-02T09:00"}, "zone": {"Asia/Tokyo"}}).want(t, http.StatusSeeOther)
		if got, want := e.job(id).RunAt, time.Date(2030, 1, 2, 0, 0, 0, 0, time.UTC); !got.Equal(want) {
			t.Errorf("09:00 in Asia/Tokyo: run at %v, want %v", got.UTC(), want)
		}
		for _, bad := range []string{"Local", "Mars/Olympus", "UTC+25:00", "UTC+1", "../etc/passwd"} {
			r := e.post(page+"/reschedule", "", url.Values{"run_at": {"2031-01-01T00:00"}, "zone": {bad}}).want(t, http.StatusSeeOther)
			if !strings.Contains(cookies(r), "err") || !e.job(id).RunAt.Equal(time.Date(2030, 1, 2, 0, 0, 0, 0, time.UTC)) {
				t.Errorf("zone %q: %q, run at %v; want an error and no change", bad, cookies(r), e.job(id).RunAt)
			}
		}
	})
}

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := parseZone(name)
	if err != nil {
		t.Fatalf("parseZone(%q): %v", name, err)
	}
	return loc
}

// TestOffsetNames: an offset's name reads back as the same offset.
func TestOffsetNames(t *testing.T) {
	t.Parallel()
	for off, want := range map[int]string{0: "UTC", 3600: "UTC+01:00", -5*3600 - 30*60: "UTC-05:30", 14 * 3600: "UTC+14:00", 5*3600 + 45*60: "UTC+05:45"} {
		if got := offsetName(off); got != want {
			t.Errorf("offsetName(%d) = %q, want %q", off, got, want)
		}
		loc := mustZone(t, want)
		if _, got := time.Date(2030, 1, 1, 0, 0, 0, 0, loc).Zone(); got != off {
			t.Errorf("parseZone(%q): offset %d, want %d", want, got, off)
		}
	}
}
