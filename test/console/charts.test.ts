/**
 * The console's live charts in a real browser (Debian's Chromium, test/helpers/browser.ts)
 * against the real service and a real webhook receiver: a subscription's deliveries over
 * time (outcomes per stretch, and the latency of their attempts) and a VPN tunnel's
 * traffic (bytes per second from its cumulative counters). Each is checked against what the
 * API serves (the table under each chart holds the chart's numbers), and drawn (pixels on
 * its canvas, not only the element), and follows the data without a reload.
 */
import type { Locator, Page } from 'playwright-core';
import { startConsole, ConsoleSession } from '../helpers/browser';
import { startReceiver, Receiver } from '../helpers/receiver';
import { eventually, waitForStatus } from '../helpers/service';

jest.setTimeout(180_000);

/** How many pixels each canvas under `selector` has drawn (not transparent), in the page's order (evaluated in the page: the tests are compiled without the DOM's types). */
const drawnPixels = (page: Page, selector: string) =>
  page.evaluate<number[]>(
    `[...document.querySelectorAll(${JSON.stringify(`${selector} .chart canvas`)})].map((c) => { if (!c.width) return 0; const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data; let n = 0; for (let j = 3; j < d.length; j += 4) if (d[j] > 0) n++; return n; })`,
  );

/** The column `label` of every row of a table under a chart (the cells carry their column's name). */
const column = (table: Locator, label: string) => table.locator(`tbody td[data-label="${label}"]`).allTextContents();
const sum = (cells: string[]) => cells.reduce((total, cell) => total + (Number(cell) || 0), 0);

/** "195.3 KiB/s" as bytes per second. */
function bytesPerSecond(text: string): number {
  const match = /^([\d.]+) (B|KiB|MiB|GiB)\/s$/.exec(text.trim());
  if (!match) throw new Error(`not a byte rate: ${text}`);
  return Number(match[1]) * 1024 ** ['B', 'KiB', 'MiB', 'GiB'].indexOf(match[2]);
}

let c: ConsoleSession;
let receiver: Receiver;
/** Whether the receiver answers 200 (after a short wait, so that a latency is measured) or 500. */
let receiverWorks = true;

beforeAll(async () => {
  receiver = await startReceiver(() => (receiverWorks ? { status: 200, delayMs: 40 } : { status: 500 }));
  c = await startConsole({
    env: {
      CLOUDPLANE_WEBHOOK_ALLOW_HTTP: 'true',
      CLOUDPLANE_WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      // The whole retry schedule (15 attempts) in a second or so, so that a delivery ends failed.
      CLOUDPLANE_WEBHOOK_TIME_SCALE: '0.0005',
    },
  });
});

afterAll(async () => {
  await c?.close();
  await receiver?.close();
});

afterEach(() => {
  // No page logged an error (a CSP refusal of a script or style, an uncaught exception) beyond the API's 4xx answers.
  expect(c.pageErrors.filter((e) => !/status of 4\d\d/.test(e))).toEqual([]);
});

describe("console: a webhook's deliveries over time", () => {
  it('says what to do with no deliveries, then draws outcomes and latency from the API, live', async () => {
    const made = await c.service.api('POST', '/api/v1/webhooks', { url: receiver.url, events: ['server.created'] });
    expect(made.status).toBe(201);
    const id = made.body.data.id;
    await c.open(`/webhooks/${id}`);
    const section = c.page.getByRole('region', { name: 'Deliveries over time' });
    await section.getByTestId('over-time-empty').getByText('Send a test event to see one delivered').waitFor();

    // The empty state's action: a test event, delivered, and drawn without a reload.
    await section.getByRole('button', { name: 'Send a test event' }).click();
    await section.getByText(/^Test event sent: delivery /).waitFor();
    await section
      .getByTestId('outcome-sentence')
      .getByText(/: 1 succeeded, 0 failed, 0 pending, of the newest 1\.$/)
      .waitFor();
    expect(receiver.received.length).toBe(1);

    // A receiver that fails: a second test event ends failed after its 15 attempts, and the page follows.
    receiverWorks = false;
    const ping = await c.service.api('POST', `/api/v1/webhooks/${id}/ping`);
    expect(ping.status).toBe(202);
    await waitForStatus(c.service, `/api/v1/webhooks/${id}/deliveries/${ping.body.data.id}`, 'failed', 30_000);
    await section
      .getByTestId('outcome-sentence')
      .getByText(/: 1 succeeded, 1 failed, 0 pending, of the newest 2\.$/)
      .waitFor({ timeout: 10_000 });

    // What the API serves: the deliveries and every attempt's latency.
    const list = (await c.service.api('GET', `/api/v1/webhooks/${id}/deliveries`)).body.data as { id: string; status: string }[];
    const latencies: number[] = [];
    for (const delivery of list) {
      const one = await c.service.api('GET', `/api/v1/webhooks/${id}/deliveries/${delivery.id}`);
      for (const attempt of one.body.data.attempts as { latency_ms: number | null }[]) if (attempt.latency_ms !== null) latencies.push(attempt.latency_ms);
    }
    expect(latencies.length).toBeGreaterThanOrEqual(16);
    // The successful attempt waited for the receiver's 40 ms.
    expect(Math.max(...latencies)).toBeGreaterThanOrEqual(40);

    await section
      .getByTestId('latency-sentence')
      .getByText(new RegExp(`^Latency of ${latencies.length} attempts per .*slowest ${Math.max(...latencies)} ms\\.$`))
      .waitFor();
    await section.getByText(/^The numbers, per /).click();
    const table = section.getByRole('region', { name: /^Deliveries per / }).locator('table');
    await eventually(async () => sum(await column(table, 'Attempts timed')) === latencies.length);
    expect(sum(await column(table, 'Succeeded'))).toBe(list.filter((d) => d.status === 'succeeded').length);
    expect(sum(await column(table, 'Failed'))).toBe(list.filter((d) => d.status === 'failed').length);
    expect(sum(await column(table, 'Pending'))).toBe(0);
    const slowest = (await column(table, 'Slowest')).filter((cell) => cell !== '—').map((cell) => Number(cell.replace(' ms', '')));
    expect(Math.max(...slowest)).toBe(Math.max(...latencies));

    // Both charts are named by their sentences and drawn.
    await section.getByRole('img', { name: /^Deliveries per .*: 1 succeeded, 1 failed/ }).waitFor();
    await section.getByRole('img', { name: /^Latency of \d+ attempts/ }).waitFor();
    await eventually(async () => (await drawnPixels(c.page, 'section[aria-labelledby="over-time-title"]')).every((n) => n > 1000));
    expect(await section.locator('.chart canvas').count()).toBe(2);
  });
});

describe("console: a VPN tunnel's traffic", () => {
  it('draws bytes per second sent and received, as the API counters grow', async () => {
    const made = await c.service.api('POST', '/api/v1/vpn-gateways', {
      name: 'office',
      region: 'fra1',
      tunnel_type: 'ipsec',
      remote_network_cidr: '192.168.10.0/24',
      remote_peer_ip: '8.8.4.4',
      pre_shared_key: 'correct-horse-battery-staple-42',
    });
    expect(made.status).toBe(201);
    const id = made.body.data.id;
    await waitForStatus(c.service, `/api/v1/vpn-gateways/${id}`, 'active', 30_000);
    await c.open(`/vpn-gateways/${id}`);
    const panel = c.page.getByRole('region', { name: 'Traffic' });
    await panel.getByText('The numbers, reading by reading').click();
    const table = panel.getByRole('region', { name: 'Traffic of the tunnel of office, reading by reading' }).locator('table');
    // Readings every 2 s: a few rates drawn, one more each time.
    await eventually(async () => (await table.locator('tbody tr').count()) >= 3, 20_000, 200);

    // The API's counters, read twice, give the rates the page shows.
    const read = async () => ({ at: Date.now(), data: (await c.service.api('GET', `/api/v1/vpn-gateways/${id}/status`)).body.data });
    const first = await read();
    await new Promise((resolve) => setTimeout(resolve, 3000));
    const second = await read();
    const seconds = (second.at - first.at) / 1000;
    const sent = (second.data.bytes_sent - first.data.bytes_sent) / seconds;
    const received = (second.data.bytes_received - first.data.bytes_received) / seconds;
    expect(sent).toBeGreaterThan(0);
    expect(received).toBeGreaterThan(0);

    const shownSent = (await column(table, 'Sent')).map(bytesPerSecond);
    const shownReceived = (await column(table, 'Received')).map(bytesPerSecond);
    expect(shownSent.length).toBeGreaterThanOrEqual(4);
    // The simulated tunnel carries a steady rate: every reading's rate is the API's, within the timing of the requests.
    for (const rate of shownSent.slice(-3)) expect(Math.abs(rate - sent) / sent).toBeLessThan(0.1);
    for (const rate of shownReceived.slice(-3)) expect(Math.abs(rate - received) / received).toBeLessThan(0.1);

    const sentence = await panel.getByTestId('rate-sentence').textContent();
    expect(sentence).toMatch(/^Traffic of the tunnel of office: sent [\d.]+ (B|KiB|MiB)\/s, received [\d.]+ (B|KiB|MiB)\/s at .*, measured every 2 s\.$/);
    await panel.getByRole('img', { name: /^Traffic of the tunnel of office: sent / }).waitFor();
    await eventually(async () => (await drawnPixels(c.page, 'section[aria-labelledby="traffic-title"]'))[0] > 1000);
  });
});

describe("console: a load balancer's traffic", () => {
  it('draws the rates of its data plane counters, and says why they are zero on the simulated provider', async () => {
    const made = await c.service.api('POST', '/api/v1/load-balancers', { name: 'edge', region: 'fra1' });
    expect(made.status).toBe(201);
    const id = made.body.data.id;
    await waitForStatus(c.service, `/api/v1/load-balancers/${id}`, 'running', 30_000);
    const stats = (await c.service.api('GET', `/api/v1/load-balancers/${id}/stats`)).body.data;
    expect(stats).toMatchObject({ instances: 0, bytes_in: 0, bytes_out: 0 });

    await c.open(`/load-balancers/${id}`);
    const panel = c.page.getByRole('region', { name: 'Traffic' });
    await panel
      .getByTestId('lb-sessions')
      .getByText(/^No data plane serves it yet \(the simulated provider passes no traffic\)/)
      .waitFor();
    await panel.getByText('The numbers, reading by reading').click();
    const table = panel.getByRole('region', { name: 'Traffic of edge, reading by reading' }).locator('table');
    await eventually(async () => (await table.locator('tbody tr').count()) >= 2, 20_000, 200);
    // The API's counters stand still, so every rate shown is zero, in and out.
    for (const label of ['In', 'Out']) for (const cell of await column(table, label)) expect(bytesPerSecond(cell)).toBe(0);
    const sentence = await panel.getByTestId('rate-sentence').textContent();
    expect(sentence).toMatch(/^Traffic of edge: in 0 B\/s, out 0 B\/s at .*, measured every 2 s\.$/);
    await panel.getByRole('img', { name: /^Traffic of edge: in / }).waitFor();
    await eventually(async () => (await drawnPixels(c.page, 'section[aria-labelledby="lb-traffic-title"]'))[0] > 1000);
  });
});
