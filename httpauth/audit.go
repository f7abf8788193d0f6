package httpauth

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
)

type principalKey struct{}

// NewContext returns ctx carrying p, who made the request (for Audit and
// for handlers that adapt what they show to p's scope).
func NewContext(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// FromContext returns the Principal NewContext put in ctx, if any.
func FromContext(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}

// record is what Audit learns of a request while it is served, and the
// ResponseWriter that learns its status (one allocation).
type record struct {
	statusWriter
	p     Principal
	known bool
	attrs []any
}

type recordKey struct{}

// Note adds attributes (key-value pairs, as slog takes them) to the audit
// line of r: the targets a handler learnt from the body — job IDs (see
// IDs), a filter, counts. It does nothing for a request Audit does not
// wrap, or whose logger does not log at info.
func Note(r *http.Request, args ...any) {
	if rec, ok := r.Context().Value(recordKey{}).(*record); ok {
		rec.attrs = append(rec.attrs, args...)
	}
}

// Identify tells the audit line of r who made it, for a handler that
// authenticates inside Audit (the API's routes; a sign-in form). It does
// nothing for a request Audit does not wrap.
func Identify(r *http.Request, p Principal) {
	if rec, ok := r.Context().Value(recordKey{}).(*record); ok {
		rec.p, rec.known = p, true
	}
}

// Audit returns h logging, at info, the request it serves once it is
// served — "audit" with the action, the token's name (never its secret nor
// anything derived from it; "(open)" on a server without tokens), the
// remote address, the path, the response's status, and what h added with
// Note. Only requests by someone are logged: those whose context holds a
// Principal when they reach Audit (NewContext) or whose handler called
// Identify. Wrap every handler that changes something; refused requests
// are logged, at a bounded rate, by Auth.Allow. With a logger that does
// not log at info, Audit costs nothing.
func Audit(log *slog.Logger, action string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !log.Enabled(r.Context(), slog.LevelInfo) {
			h.ServeHTTP(w, r)
			return
		}
		rec := &record{statusWriter: statusWriter{ResponseWriter: w, status: http.StatusOK}}
		rec.p, rec.known = FromContext(r.Context())
		h.ServeHTTP(&rec.statusWriter, r.WithContext(context.WithValue(r.Context(), recordKey{}, rec)))
		if !rec.known {
			return
		}
		name := rec.p.Name
		if name == "" {
			name = "(open)"
		}
		attrs := []slog.Attr{slog.String("action", action), slog.String("token", name), slog.String("remote", r.RemoteAddr),
			slog.String("path", r.URL.Path), slog.Int("status", rec.status),
			slog.Group("", rec.attrs...)} // a group without a key is inlined
		log.LogAttrs(r.Context(), slog.LevelInfo, "audit", attrs...)
	})
}

// statusWriter remembers the status of a response.
type statusWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

// Unwrap returns the ResponseWriter it wraps (for http.ResponseController).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// maxLoggedIDs is how many IDs an audit line lists; it counts the rest.
const maxLoggedIDs = 20

// IDs returns the attribute "ids" listing ids for an audit line
// ("3,4,9"), at most 20 of them and then how many more ("… +480 more").
func IDs[T ~int64](ids []T) slog.Attr {
	var b strings.Builder
	for i, id := range ids {
		if i == maxLoggedIDs {
			b.WriteString(" +" + strconv.Itoa(len(ids)-i) + " more")
			break
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(int64(id), 10))
	}
	return slog.String("ids", b.String())
}
