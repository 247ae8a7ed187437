// Receives Cloudplane webhook deliveries, verified with the Standard Webhooks library.
//
// Run: CLOUDPLANE_WEBHOOK_SECRET=whsec_... PORT=8000 go run .
package main

import (
	"encoding/json"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"sync"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

type event struct {
	ID        string `json:"id"`
	Type      string `json:"type"`
	CreatedAt string `json:"created_at"`
	Data      struct {
		ID string `json:"id"`
	} `json:"data"`
}

type receiver struct {
	webhook *standardwebhooks.Webhook
	mu      sync.Mutex
	// Deliveries already handled, by X-Service-Delivery: a retry of one that was handled is
	// answered 2xx and not handled again. Keep these in your database (a unique key) so they
	// outlive a restart; a few days' worth is enough.
	handled map[string]bool
	// The created_at of the newest event applied to each resource: deliveries can arrive out
	// of order, and an older event must not undo a newer one.
	newest map[string]string
}

func logLine(fields map[string]any) {
	line, _ := json.Marshal(fields)
	os.Stdout.Write(append(line, '\n'))
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	// Checks webhook-signature over webhook-id, webhook-timestamp and the raw body, and
	// refuses a timestamp more than 5 minutes away from now.
	if err := rc.webhook.Verify(body, r.Header); err != nil {
		logLine(map[string]any{"outcome": "rejected"})
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	var e event
	if err := json.Unmarshal(body, &e); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	delivery := r.Header.Get("X-Service-Delivery")
	rc.mu.Lock()
	outcome := "accepted"
	if rc.handled[delivery] {
		outcome = "duplicate"
	} else if e.CreatedAt < rc.newest[e.Data.ID] {
		outcome = "stale" // a newer event about this resource was applied already
	} else {
		rc.newest[e.Data.ID] = e.CreatedAt
		// ... act on the event here: e.Type, the body's "data" ...
	}
	rc.handled[delivery] = true
	rc.mu.Unlock()
	logLine(map[string]any{"outcome": outcome, "delivery": delivery, "type": r.Header.Get("X-Service-Event"), "id": e.ID})
	w.WriteHeader(http.StatusNoContent)
}

func main() {
	// The subscription's secret, whsec_... as the create (or rotate-secret) response gave it.
	webhook, err := standardwebhooks.NewWebhook(os.Getenv("CLOUDPLANE_WEBHOOK_SECRET"))
	if err != nil {
		log.Fatal(err)
	}
	port := os.Getenv("PORT")
	if port == "" {
		port = "8000"
	}
	listener, err := net.Listen("tcp", "127.0.0.1:"+port)
	if err != nil {
		log.Fatal(err)
	}
	logLine(map[string]any{"listening": listener.Addr().(*net.TCPAddr).Port})
	rc := &receiver{webhook: webhook, handled: map[string]bool{}, newest: map[string]string{}}
	log.Fatal(http.Serve(listener, rc))
}
