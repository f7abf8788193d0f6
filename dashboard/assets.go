package dashboard

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"time"
)

//go:embed static
var staticFS embed.FS

// asset is one embedded file, with the hash its URL carries so that
// browsers may keep it for good.
type asset struct {
	body  []byte
	hash  string
	ctype string
}

// assets are the embedded static files by name, read once.
var assets = func() map[string]asset {
	m := make(map[string]asset)
	entries, err := fs.ReadDir(staticFS, "static")
	if err != nil {
		panic(err)
	}
	for _, e := range entries {
		b, err := staticFS.ReadFile("static/" + e.Name())
		if err != nil {
			panic(err)
		}
		sum := sha256.Sum256(b)
		ctype := mime.TypeByExtension(path.Ext(e.Name()))
		if ctype == "" {
			ctype = "application/octet-stream"
		}
		m[e.Name()] = asset{body: b, hash: hex.EncodeToString(sum[:6]), ctype: ctype}
	}
	return m
}()

// assetURL returns the template function that names a static file's URL,
// with its hash.
func assetURL(prefix string) func(string) string {
	return func(name string) string {
		a, ok := assets[name]
		if !ok {
			panic("dashboard: no static file " + name)
		}
		return prefix + "/static/" + name + "?v=" + a.hash
	}
}

// static serves the embedded files; anyone may fetch them (they hold no
// data). A URL with the file's hash may be cached for good.
func (h *handler) static(w http.ResponseWriter, r *http.Request) {
	a, ok := assets[r.PathValue("file")]
	if !ok {
		http.NotFound(w, r)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", a.ctype)
	hd.Set("ETag", `"`+a.hash+`"`)
	if r.URL.Query().Get("v") == a.hash {
		hd.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		hd.Set("Cache-Control", "no-cache")
	}
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(a.body))
}
