"""Receives Cloudplane webhook deliveries, verified with the Standard Webhooks library.

Run: CLOUDPLANE_WEBHOOK_SECRET=whsec_... PORT=8000 python receiver.py
"""
import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks.webhooks import Webhook, WebhookVerificationError

# The subscription's secret, whsec_... as the create (or rotate-secret) response gave it.
webhook = Webhook(os.environ["CLOUDPLANE_WEBHOOK_SECRET"])

# Deliveries already handled, by X-Service-Delivery: a retry of one that was handled is
# answered 2xx and not handled again. Keep these in your database (a unique key) so they
# outlive a restart; a few days' worth is enough.
handled = set()
# The created_at of the newest event applied to each resource: deliveries can arrive out
# of order, and an older event must not undo a newer one.
newest = {}
lock = threading.Lock()


def log(**fields):
    print(json.dumps(fields), flush=True)


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        try:
            # Checks webhook-signature over webhook-id, webhook-timestamp and the raw body,
            # and refuses a timestamp more than 5 minutes away from now.
            event = webhook.verify(body, dict(self.headers))
        except WebhookVerificationError:
            log(outcome="rejected")
            return self.answer(401)
        delivery = self.headers["X-Service-Delivery"]
        with lock:
            if delivery in handled:
                outcome = "duplicate"
            elif event["created_at"] < newest.get(event["data"].get("id"), ""):
                outcome = "stale"  # a newer event about this resource was applied already
            else:
                outcome = "accepted"
                newest[event["data"].get("id")] = event["created_at"]
                # ... act on the event here: event["type"], event["data"] ...
            handled.add(delivery)
        log(outcome=outcome, delivery=delivery, type=self.headers["X-Service-Event"], id=event["id"])
        self.answer(204)

    def answer(self, status):
        self.send_response(status)
        self.end_headers()

    def log_message(self, *args):
        pass  # one JSON line per delivery instead


server = ThreadingHTTPServer(("127.0.0.1", int(os.environ.get("PORT", "8000"))), Receiver)
log(listening=server.server_address[1])
server.serve_forever()
