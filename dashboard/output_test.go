package dashboard

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/hopperq/hopper"
)

// TestJobPageOutput: the job page shows each attempt's output beside the
// exec result, escaped (it is untrusted text), with a link to each stream
// in full, served as text/plain that the browser never reads as a page.
func TestJobPageOutput(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	id := e.enqueue("exec", nil)
	e.run()
	page := e.get("/jobs/"+idStr(id), "").want(t, http.StatusOK).body
	for _, want := range []string{
		`data-stream="stdout">compiling &lt;script&gt;alert(1)&lt;/script&gt;…`,
		`data-stream="stderr">ld: cannot find -lfoo`,
		`msg=linking target=&#34;&lt;img src=x onerror=alert(2)&gt;&#34;`,
		`href="/jobs/` + idStr(id) + `/output?attempt=1&amp;stream=stdout"`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("job page lacks %q", want)
		}
	}
	for _, bad := range []string{"<script>alert(1)", "<img src=x"} {
		if strings.Contains(page, bad) {
			t.Errorf("job page holds %q unescaped", bad)
		}
	}
	r := e.get("/jobs/"+idStr(id)+"/output?attempt=1&stream=stdout", "").want(t, http.StatusOK)
	if r.body != "compiling <script>alert(1)</script>…\nlinking…\n" {
		t.Errorf("full stdout: got %q", r.body)
	}
	for k, want := range map[string]string{"Content-Type": "text/plain; charset=utf-8", "X-Content-Type-Options": "nosniff",
		"Content-Security-Policy": "default-src 'none'; sandbox"} {
		if got := r.Header.Get(k); got != want {
			t.Errorf("full stdout: %s %q, want %q", k, got, want)
		}
	}
	e.get("/jobs/"+idStr(id)+"/output?attempt=2&stream=stdout", "").want(t, http.StatusNotFound)
	e.get("/jobs/"+idStr(id)+"/output?attempt=1&stream=stdin", "").want(t, http.StatusBadRequest)
	e.get("/jobs/"+idStr(id)+"/output?stream=stdout", "").want(t, http.StatusBadRequest)
}
func idStr(id hopper.ID) string { return strconv.FormatInt(int64(id), 10) }
