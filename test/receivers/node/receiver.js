// Receives Cloudplane webhook deliveries, verified with Stripe's library (X-Service-Signature).
//
// Run: CLOUDPLANE_WEBHOOK_SECRET=whsec_... PORT=8000 node receiver.js
const http = require('node:http');
const Stripe = require('stripe');

// The subscription's secret, whsec_... as the create (or rotate-secret) response gave it.
const secret = process.env.CLOUDPLANE_WEBHOOK_SECRET;

// Deliveries already handled, by X-Service-Delivery: a retry of one that was handled is
// answered 2xx and not handled again. Keep these in your database (a unique key) so they
// outlive a restart; a few days' worth is enough.
const handled = new Set();
// The created_at of the newest event applied to each resource: deliveries can arrive out
// of order, and an older event must not undo a newer one.
const newest = new Map();

const log = (fields) => console.log(JSON.stringify(fields));

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', () => {
    const body = Buffer.concat(chunks); // the raw bytes: parsing first would change them
    let event;
    try {
      // Checks X-Service-Signature (t=...,v1=...) over the raw body, and refuses a
      // timestamp more than 300 seconds old.
      event = Stripe.webhooks.constructEvent(body, req.headers['x-service-signature'], secret);
    } catch {
      log({ outcome: 'rejected' });
      return res.writeHead(401).end();
    }
    const delivery = req.headers['x-service-delivery'];
    let outcome = 'accepted';
    if (handled.has(delivery)) {
      outcome = 'duplicate';
    } else if (event.created_at < (newest.get(event.data.id) ?? '')) {
      outcome = 'stale'; // a newer event about this resource was applied already
    } else {
      newest.set(event.data.id, event.created_at);
      // ... act on the event here: event.type, event.data ...
    }
    handled.add(delivery);
    log({ outcome, delivery, type: req.headers['x-service-event'], id: event.id });
    res.writeHead(204).end();
  });
});

server.listen(Number(process.env.PORT ?? 8000), '127.0.0.1', () => log({ listening: server.address().port }));
