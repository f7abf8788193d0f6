package dashboard

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/httpauth"
)

//go:embed templates/*.html
var templateFS embed.FS

// page is what every template gets: the layout's fields and the page's
// own data.
type page struct {
	Title    string // this page's; the layout adds the installation's
	Nav      string // the navigation entry to highlight
	App      string // Options.Title
	Base     string // Options.Prefix
	Scope    httpauth.Scope
	CanWrite bool // cancel, retry, reschedule, pause, resume
	CanAdmin bool // delete
	SignedIn bool // tokens are configured: offer to sign out
	Flash    *flash
	Version  uint64    // the live version the page shows (see hub)
	Dead     int       // jobs in the dead-letter queue, for the navigation
	Back     string    // this page's path and query, for actions to return to
	Live     bool      // the page updates itself
	Refresh  int       // reload the page every Refresh seconds (0: never)
	Bulk     *bulkView // a bulk action running, for the banner
	Data     any
}

// layoutPages are the templates rendered inside the layout.
var layoutPages = []string{"overview", "jobs", "job", "schedules", "queues", "servers", "alerts", "confirm", "bulk", "error"}

// parseTemplates parses each page with the layout and the shared
// partials, with the functions bound to h.
func (h *handler) parseTemplates() map[string]*template.Template {
	funcs := h.funcs()
	out := make(map[string]*template.Template)
	for _, name := range layoutPages {
		out[name] = template.Must(template.New(name).Funcs(funcs).ParseFS(templateFS,
			"templates/layout.html", "templates/partials.html", "templates/"+name+".html"))
	}
	out["login"] = template.Must(template.New("login").Funcs(funcs).ParseFS(templateFS, "templates/login.html"))
	return out
}

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// render writes page p with template name and status. It renders into a
// buffer first, so that a template error is a clean 500.
func (h *handler) render(w http.ResponseWriter, r *http.Request, status int, name string, p *page) {
	h.fillPage(w, r, p)
	buf := bufPool.Get().(*bytes.Buffer)
	defer func() { buf.Reset(); bufPool.Put(buf) }()
	root := "layout"
	if name == "login" {
		root = "login"
	}
	if err := h.pages[name].ExecuteTemplate(buf, root, p); err != nil {
		h.log.Error("dashboard: render", "page", name, "err", err)
		http.Error(w, "internal error rendering the page", http.StatusInternalServerError)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", "text/html; charset=utf-8")
	hd.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// fillPage sets the layout's fields of p from the request.
func (h *handler) fillPage(w http.ResponseWriter, r *http.Request, p *page) {
	p.App = h.o.Title
	p.Base = h.prefix
	p.Scope = scopeOf(r.Context())
	if p.Scope == httpauth.None {
		p.Scope, _ = h.auth.Scope(r)
	}
	p.CanWrite = p.Scope >= httpauth.Write
	p.CanAdmin = p.Scope >= httpauth.Admin
	p.SignedIn = !h.auth.Open() && p.Scope > httpauth.None
	p.Back = r.URL.RequestURI()
	if p.Version == 0 {
		p.Version = h.hub.version()
	}
	if !isLive(r) {
		p.Flash = h.takeFlash(w, r)
	}
	if t := h.bulks.last(); t != nil && !t.ended() && r.URL.Path != h.url("/bulk") {
		v := t.snapshot()
		p.Bulk = &v
	}
	if p.Scope > httpauth.None {
		if c, err := h.hub.counts(r.Context()); err == nil {
			p.Dead = c.total(deadState)
		}
	}
}

// isLive reports whether r is a page's own live refresh (app.js), which
// must not consume the flash message.
func isLive(r *http.Request) bool { return r.Header.Get("X-Hopper-Live") == "1" }

// fail renders an error page with status and a message for the user.
func (h *handler) fail(w http.ResponseWriter, r *http.Request, status int, msg string) {
	if r.Header.Get("Accept") == "text/event-stream" {
		http.Error(w, msg, status)
		return
	}
	h.render(w, r, status, "error", &page{Title: http.StatusText(status), Data: errorView{Status: status, Message: msg}})
}

// storeFailed answers a request whose call to the client failed: a
// message for what the user can act on, the log for the rest.
func (h *handler) storeFailed(w http.ResponseWriter, r *http.Request, err error) {
	var fe *hopper.FieldError
	switch {
	case errors.As(err, &fe):
		h.fail(w, r, http.StatusBadRequest, fe.Error())
	case errors.Is(err, hopper.ErrNotFound):
		h.fail(w, r, http.StatusNotFound, "Not found: it may have been deleted.")
	case errors.Is(err, hopper.ErrClosed):
		h.fail(w, r, http.StatusServiceUnavailable, "The job store is closed: the server is stopping.")
	case r.Context().Err() != nil:
		h.fail(w, r, http.StatusServiceUnavailable, "The request was cancelled.")
	default:
		h.log.Error("dashboard: store", "path", r.URL.Path, "err", err)
		h.fail(w, r, http.StatusInternalServerError, "The job store failed; the server's log says why.")
	}
}

type errorView struct {
	Status  int
	Message string
}

// unauthorized answers a request without a valid token: pages send the
// browser to the sign-in form, everything else gets 401.
func (h *handler) unauthorized(w http.ResponseWriter, r *http.Request, err error) {
	if r.Method == http.MethodGet && r.Header.Get("Accept") != "text/event-stream" && !isLive(r) {
		q := url.Values{"next": {r.URL.RequestURI()}}
		if err == httpauth.ErrBadToken || err == httpauth.ErrBadSession {
			q.Set("expired", "1")
		}
		http.Redirect(w, r, h.url("/login?"+q.Encode()), http.StatusSeeOther)
		return
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="hopper"`)
	h.fail(w, r, http.StatusUnauthorized, "Sign in first.")
}

// local returns target if it is a path of this dashboard (for redirects
// after sign-in and actions: never another site), else def.
func (h *handler) local(target, def string) string {
	if target == "" || !strings.HasPrefix(target, h.prefix+"/") || strings.HasPrefix(target, "//") ||
		strings.HasPrefix(target, "/\\") || strings.ContainsAny(target, "\r\n") {
		return def
	}
	u, err := url.Parse(target)
	if err != nil || u.Scheme != "" || u.Host != "" {
		return def
	}
	return target
}

// flash is a message shown once, on the page an action redirects to.
type flash struct {
	Error bool
	Text  string
}

const flashCookie = "hopper_flash"

// setFlash stores a message for the next page (a short-lived cookie).
func (h *handler) setFlash(w http.ResponseWriter, r *http.Request, isErr bool, text string) {
	v := "ok:" + text
	if isErr {
		v = "err:" + text
	}
	if len(v) > 1000 {
		v = v[:1000]
	}
	http.SetCookie(w, &http.Cookie{Name: flashCookie, Value: url.QueryEscape(v), Path: h.cookiePath(), MaxAge: 60,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: h.secure(r)})
}

// takeFlash returns the message an action left, and clears it.
func (h *handler) takeFlash(w http.ResponseWriter, r *http.Request) *flash {
	c, err := r.Cookie(flashCookie)
	if err != nil {
		return nil
	}
	http.SetCookie(w, &http.Cookie{Name: flashCookie, Path: h.cookiePath(), MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: h.secure(r)})
	v, err := url.QueryUnescape(c.Value)
	if err != nil {
		return nil
	}
	kind, text, ok := strings.Cut(v, ":")
	if !ok || text == "" {
		return nil
	}
	return &flash{Error: kind == "err", Text: text}
}

// done ends an action: a message for the next page, and a redirect to
// back (a path of this dashboard) or def.
func (h *handler) done(w http.ResponseWriter, r *http.Request, isErr bool, msg, def string) {
	httpauth.Note(r, "refused", isErr, "result", msg)
	h.setFlash(w, r, isErr, msg)
	http.Redirect(w, r, h.local(r.PostFormValue("back"), def), http.StatusSeeOther)
}

func (h *handler) cookiePath() string { return h.prefix + "/" }

func (h *handler) secure(r *http.Request) bool { return h.o.SecureCookie || r.TLS != nil }

// scopeOf is the scope of the request whose context is ctx, as its check
// found it (None if unchecked).
func scopeOf(ctx context.Context) httpauth.Scope {
	p, _ := httpauth.FromContext(ctx)
	return p.Scope
}
