// Package browser holds the dashboard's browser tests: they drive
// Debian's chromium through chromedp (the DevTools protocol) against the
// dashboard served over HTTP, as a person sees it: its pages, its script,
// its live updates and its forms. They live in the nested module
// internal/heavytest so that the library's module does not require
// chromedp; they reach the dashboard only through its exported API
// (dashboard.New, served by httptest). They find the browser through
// $HOPPER_CHROMIUM or chromium on PATH, and skip without one (fail, with
// CI set).
package browser
