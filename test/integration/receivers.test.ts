/**
 * The receivers of docs/webhook-receivers.md, run as the guide shows them (Python and Go
 * with the Standard Webhooks libraries, Node with Stripe's), against real deliveries of
 * the running service: each accepts genuine deliveries, rejects a tampered body, answers a
 * repeated delivery without handling it twice, and keeps accepting during a secret
 * rotation. scripts/ensure-receivers.sh (run by `make test` through ensure-tools.sh, and
 * here, cached) makes the Python venv and builds the Go binary outside the repo.
 */
import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import { startTestService, TestService, eventually, request } from '../helpers/service';
import { startReceiver, Receiver, Received } from '../helpers/receiver';
import { freePort } from '../helpers/kube-apiserver';

jest.setTimeout(240_000);

const REPO = path.resolve(__dirname, '../..');
const ENV = {
  CLOUDPLANE_WEBHOOK_ALLOW_HTTP: 'true',
  CLOUDPLANE_WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
  CLOUDPLANE_WEBHOOK_TIME_SCALE: '0.002',
};

interface Line {
  outcome?: 'accepted' | 'duplicate' | 'stale' | 'rejected';
  delivery?: string;
  type?: string;
  id?: string;
  listening?: number;
}

interface RunningReceiver {
  url: string;
  lines: Line[];
  process: ChildProcess;
}

/** The commands that run each receiver, from the paths ensure-receivers.sh printed. */
function receiverCommands(): Record<string, [string, string[]]> {
  const printed = execFileSync(path.join(REPO, 'scripts/ensure-receivers.sh'), { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  const paths = Object.fromEntries(
    printed
      .trim()
      .split('\n')
      .map((line) => line.split(' ', 2)),
  );
  return {
    python: [paths.python, [path.join(REPO, 'test/receivers/python/receiver.py')]],
    go: [paths.go, []],
    node: [process.execPath, [path.join(REPO, 'test/receivers/node/receiver.js')]],
  };
}

async function run([command, args]: [string, string[]], secret: string): Promise<RunningReceiver> {
  const port = await freePort();
  const child = spawn(command, args, { env: { ...process.env, CLOUDPLANE_WEBHOOK_SECRET: secret, PORT: String(port) }, stdio: ['ignore', 'pipe', 'inherit'] });
  const lines: Line[] = [];
  readline.createInterface({ input: child.stdout! }).on('line', (line) => lines.push(JSON.parse(line)));
  await eventually(async () => lines.some((l) => l.listening === port), 30_000);
  return { url: `http://127.0.0.1:${port}/webhooks/cloudplane`, lines, process: child };
}

/** Sends a captured delivery again as the service sent it, with the body given. */
async function replay(target: string, delivery: Received, body: string): Promise<number> {
  const headers: Record<string, string> = {};
  for (const name of ['content-type', 'x-service-event', 'x-service-delivery', 'x-service-signature', 'webhook-id', 'webhook-timestamp', 'webhook-signature']) {
    headers[name] = delivery.headers[name] as string;
  }
  return (await fetch(target, { method: 'POST', headers, body })).status;
}

describe.each(['python', 'go', 'node'])('the %s receiver of the guide', (language) => {
  let t: TestService;
  let capture: Receiver;
  let receiver: RunningReceiver | undefined;
  beforeAll(async () => {
    [t, capture] = await Promise.all([startTestService(ENV), startReceiver()]);
  });
  afterAll(async () => {
    receiver?.process.kill();
    await t.stop();
    await capture.close();
  });

  const bucket = async (name: string) => expect((await t.api('POST', '/api/v1/object-storage', { name, region: 'fra1' })).status).toBe(201);
  const delivery = (webhookId: string, id: string) => t.api('GET', `/api/v1/webhooks/${webhookId}/deliveries/${id}`).then((r) => r.body.data);

  it('accepts genuine deliveries, rejects a tampered body, handles a repeat once, and accepts through a secret rotation', async () => {
    const commands = receiverCommands();
    // A genuine delivery to tamper with: caught by a plain receiver first.
    const created = await t.api('POST', '/api/v1/webhooks', { url: capture.url, events: ['bucket.*'], filter: { 'bucket.name': `${language}-1` } });
    expect(created.status).toBe(201);
    const hook = created.body.data;
    await bucket(`${language}-1`);
    // Both of its events, so none is still on its way when the URL changes.
    await eventually(async () => capture.received.length === 2);
    const genuine = capture.received.find((r) => r.headers['x-service-event'] === 'bucket.created')!;
    receiver = await run(commands[language], hook.secret);

    expect(await replay(receiver.url, genuine, genuine.body)).toBe(204);
    const tampered = genuine.body.replace(`"${language}-1"`, `"${language}-x"`);
    expect(tampered).not.toBe(genuine.body);
    expect(await replay(receiver.url, genuine, tampered)).toBe(401);
    // The receiver logs an outcome after it answers: its line can come after the answer.
    const outcomes = await eventually(async () => {
      const lines = receiver!.lines.filter((l) => l.outcome);
      return lines.length >= 2 && lines;
    });
    expect(outcomes).toEqual([
      { outcome: 'accepted', delivery: genuine.headers['x-service-delivery'], type: 'bucket.created', id: JSON.parse(genuine.body).id },
      { outcome: 'rejected' },
    ]);

    // Real deliveries, straight from the service to the receiver.
    expect((await t.api('PATCH', `/api/v1/webhooks/${hook.id}`, { url: receiver.url, filter: { 'bucket.name': `${language}-2` } })).status).toBe(200);
    await bucket(`${language}-2`);
    // Handled: applied, or seen to be older than what was applied (arrival order is best-effort).
    const handled = () => receiver!.lines.filter((l) => l.outcome === 'accepted' || l.outcome === 'stale');
    const accepted = await eventually(async () => {
      const got = handled().filter((l) => l.delivery !== genuine.headers['x-service-delivery']);
      return got.length === 2 ? got : null;
    });
    expect(accepted.map((l) => l.type).sort()).toEqual(['bucket.available', 'bucket.created']);
    for (const line of accepted) {
      await eventually(async () => (await delivery(hook.id, line.delivery!)).status === 'succeeded');
      expect(await delivery(hook.id, line.delivery!)).toMatchObject({ response_status: 204, error: null });
    }

    // The same delivery again (a manual retry): answered 2xx, handled once.
    const again = accepted[0].delivery!;
    expect((await t.api('POST', `/api/v1/webhooks/${hook.id}/deliveries/${again}/retry`)).status).toBe(202);
    await eventually(async () => receiver!.lines.some((l) => l.outcome === 'duplicate' && l.delivery === again));
    await eventually(async () => (await delivery(hook.id, again)).attempt === '2/15');
    expect((await delivery(hook.id, again)).status).toBe('succeeded');

    // Rotated: deliveries are signed with both secrets, so the receiver still holding the
    // old one accepts them until it is given the new one.
    const rotated = await t.api('POST', `/api/v1/webhooks/${hook.id}/rotate-secret`);
    expect(rotated.status).toBe(200);
    expect((await t.api('PATCH', `/api/v1/webhooks/${hook.id}`, { filter: { 'bucket.name': `${language}-3` } })).status).toBe(200);
    await bucket(`${language}-3`);
    await eventually(async () => handled().length === 5);
    expect(receiver.lines.filter((l) => l.outcome === 'rejected')).toHaveLength(1);
    expect((await request(t.url, 'GET', '/healthz')).status).toBe(200);
  });
});
