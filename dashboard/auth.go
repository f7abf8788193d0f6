package dashboard

import (
	"net/http"
	"strings"

	"github.com/hopperq/hopper/httpauth"
)

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
		v.Error = "Your token is no longer valid: sign in again."
	}
	h.renderLogin(w, r, http.StatusOK, v)
}

// login checks the token posted and, if it is valid, stores it in the
// httpauth cookie (HttpOnly, SameSite=Strict; Secure over TLS) and goes on
// to the page the user wanted.
func (h *handler) login(w http.ResponseWriter, r *http.Request) {
	next := h.local(r.PostFormValue("next"), h.url("/"))
	token := strings.TrimSpace(r.PostFormValue("token"))
	if h.auth.Open() {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	if token == "" || !h.auth.Valid(token) {
		h.log.Info("dashboard: sign-in refused", "remote", r.RemoteAddr)
		h.renderLogin(w, r, http.StatusUnauthorized, loginView{Next: next, Error: "That token is not valid."})
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name: httpauth.CookieName, Value: token, Path: h.cookiePath(),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: h.secure(r),
	})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// logout forgets the token.
func (h *handler) logout(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{
		Name: httpauth.CookieName, Path: h.cookiePath(), MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: h.secure(r),
	})
	http.Redirect(w, r, h.url("/login"), http.StatusSeeOther)
}

func (h *handler) renderLogin(w http.ResponseWriter, r *http.Request, status int, v loginView) {
	v.App, v.Base = h.o.Title, h.prefix
	h.render(w, r, status, "login", &page{Title: "Sign in", Data: v})
}
