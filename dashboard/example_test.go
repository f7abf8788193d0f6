package dashboard_test

import (
	"context"
	"io"
	"log"
	"net/http"
	"os"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/dashboard"
	"github.com/hopperq/hopper/httpauth"
	_ "github.com/hopperq/hopper/store/sqlitestore"
)

// Mount the dashboard under /hopper/ of an application's own server, with
// the tokens of $HOPPER_TOKENS ("read:SECRET,admin:SECRET").
func ExampleNew() {
	client, err := hopper.Open(context.Background(), "sqlite:app.db", hopper.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Stop(context.Background())

	auth := &httpauth.Auth{}
	if err := auth.ParseTokens(os.Getenv("HOPPER_TOKENS")); err != nil {
		log.Fatal(err)
	}
	dash := dashboard.New(client, dashboard.Options{Auth: auth, Prefix: "/hopper"})
	defer dash.(io.Closer).Close() // ends the live streams before the server stops

	mux := http.NewServeMux()
	mux.Handle("/hopper/", dash) // the full path: no http.StripPrefix
	log.Fatal(http.ListenAndServe("127.0.0.1:8080", mux))
}
