// Package dashboard is Hopper's web interface: an http.Handler that shows a
// client's jobs, queues, dead-letter queue and recurring schedules, and
// lets an operator cancel, retry, reschedule and delete jobs and pause and
// resume schedules.
//
// Pages are rendered on the server with html/template; the stylesheet, a
// small hand-written script and the icon are embedded in the binary. The
// pages work without the script; with it, counts and lists update as jobs
// move (server-sent events, with polling as the fallback).
//
// Mount it where you like:
//
//	mux.Handle("/", dashboard.New(client, dashboard.Options{Auth: auth}))
//	mux.Handle("/dashboard/", dashboard.New(client, dashboard.Options{Prefix: "/dashboard"}))
//
// Requests keep their full path: do not wrap the handler in
// http.StripPrefix.
//
// # Security
//
// Every state-changing request is a POST checked by
// http.CrossOriginProtection (a cross-origin browser request is refused with
// 403), and every page carries a Content-Security-Policy that allows only the
// dashboard's own script and stylesheet. With tokens configured in
// Options.Auth (package httpauth), browsers sign in with a form that sets
// the httpauth.CookieName cookie (HttpOnly, SameSite=Strict) to a session
// — signed, with an expiry, never the token itself; signing out ends it.
// A read token sees no action buttons and is refused (403) if it posts
// anyway; deleting jobs needs an admin token. Every action, sign-in and
// sign-out is logged with the token's name (httpauth.Audit).
//
// # Cost
//
// Counts come from Client.StatsCached, refreshed at most every
// Options.StatsMaxAge, never counted per page view; lists page by ID
// (ListOptions.AfterID), never by offset. docs/dashboard.md says more.
package dashboard
