package dashboard

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/hopperq/hopper/httpauth"
)

// legacyCookie is the cookie older versions set to the token itself. It
// is no longer read; sign-in and sign-out delete it.
const legacyCookie = "hopper_token"

// loginView is the sign-in page.
type loginView struct {
	App   string
	Base  string
	Next  string
	Error string
}

// loginPage shows the sign-in form; with no tokens configured there is
// nothing to sign in to.
func (h *handler) loginPage(w http.ResponseWriter, r *http.Request) {
	if h.auth.Open() {
		http.Redirect(w, r, h.url("/"), http.StatusSeeOther)
		return
	}
	v := loginView{Next: h.local(r.URL.Query().Get("next"), h.url("/"))}
	if r.URL.Query().Get("expired") == "1" {
		v.Error = "Your session has ended (it expired or was signed out, or its token changed): sign in again."
	}
	h.renderLogin(w, r, http.StatusOK, v)
}

// login checks the token posted and, if it is valid, starts a session
// (httpauth.Auth.NewSession) kept in the httpauth cookie (HttpOnly,
// SameSite=Strict; Secure over TLS) and goes on to the page the user
// wanted. The cookie holds the session, never the token.
func (h *handler) login(w http.ResponseWriter, r *http.Request) {
	next := h.local(r.PostFormValue("next"), h.url("/"))
	if h.auth.Open() {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	s, err := h.auth.NewSession(r, r.PostFormValue("token"))
	var te *httpauth.ThrottledError
	switch {
	case errors.As(err, &te):
		w.Header().Set("Retry-After", strconv.Itoa(te.RetryAfterSeconds()))
		h.renderLogin(w, r, http.StatusTooManyRequests, loginView{Next: next,
			Error: fmt.Sprintf("Too many failed sign-ins from your address: try again in %s.", te.RetryAfter.Round(time.Second))})
		return
	case err != nil:
		h.renderLogin(w, r, http.StatusUnauthorized, loginView{Next: next, Error: "That token is not valid."})
		return
	}
	httpauth.Identify(r, s.Principal)
	h.forgetLegacy(w, r)
	http.SetCookie(w, &http.Cookie{
		Name: httpauth.CookieName, Value: s.Value, Path: h.cookiePath(),
		Expires: s.Expires, MaxAge: int(time.Until(s.Expires).Seconds()),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: h.secure(r),
	})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// logout ends the session (httpauth.Auth.EndSession: this server refuses
// it from now on) and deletes its cookie.
func (h *handler) logout(w http.ResponseWriter, r *http.Request) {
	if p, ok := h.auth.EndSession(r); ok {
		httpauth.Identify(r, p)
	}
	h.forgetLegacy(w, r)
	http.SetCookie(w, &http.Cookie{
		Name: httpauth.CookieName, Path: h.cookiePath(), MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: h.secure(r),
	})
	http.Redirect(w, r, h.url("/login"), http.StatusSeeOther)
}

// forgetLegacy deletes the cookie of older versions, which held the token
// itself, if the browser still has it.
func (h *handler) forgetLegacy(w http.ResponseWriter, r *http.Request) {
	if _, err := r.Cookie(legacyCookie); err == nil {
		http.SetCookie(w, &http.Cookie{Name: legacyCookie, Path: h.cookiePath(), MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: h.secure(r)})
	}
}

func (h *handler) renderLogin(w http.ResponseWriter, r *http.Request, status int, v loginView) {
	v.App, v.Base = h.o.Title, h.prefix
	h.render(w, r, status, "login", &page{Title: "Sign in", Data: v})
}
