package logtest

import (
	"context"
	"log/slog"
)

// Signal returns a logger that drops every record and sends on ch, without
// blocking, when a record's message is msg: how a test waits for an event
// the code under test only logs (give ch a buffer of one).
func Signal(msg string, ch chan<- struct{}) *slog.Logger {
	return slog.New(signal{msg, ch})
}

// signal is Signal's handler.
type signal struct {
	msg string
	ch  chan<- struct{}
}

func (h signal) Enabled(context.Context, slog.Level) bool { return true }
func (h signal) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h signal) WithGroup(string) slog.Handler            { return h }

func (h signal) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		select {
		case h.ch <- struct{}{}:
		default:
		}
	}
	return nil
}
