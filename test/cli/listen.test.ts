/**
 * `cloudplane listen --forward-to`: the service, the built CLI as a child process, and a
 * real local receiver that verifies each delivery's Standard Webhooks signature with the
 * secret the CLI printed. The receiver sits on loopback, which the target guard refuses for
 * HTTP subscriptions: the deliveries reach it only through the CLI's stream.
 */
import path from 'node:path';
import net from 'node:net';
import type { ChildProcess } from 'node:child_process';
import { Webhook } from 'standardwebhooks';
import { startTestService, eventually, TestService, request, tempDataDir } from '../helpers/service';
import { startChildService, ChildService } from '../helpers/child-service';
import { installCrds, storeEnvFor } from '../helpers/cluster';
import { startKubeApiServer, KubeApiServer } from '../helpers/kube-apiserver';
import { startReceiver, Receiver, Received } from '../helpers/receiver';
import { spawnTracked } from '../helpers/processes';
import { serverSentEvents } from '../../src/cli/server-sent-events';
import { findIn } from '../helpers/secret-scan';

const CLI = path.resolve(__dirname, '../../dist/src/main.js');
const LEASE_SECONDS = 2;

interface RunningCli {
  child: ChildProcess;
  output: () => string;
  secret: string;
  listenerId: string;
  exited: Promise<number | null>;
}

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function startCli(t: Pick<TestService, 'url' | 'key'>, forwardTo: string, args: string[] = [], key = t.key): Promise<RunningCli> {
  const child = spawnTracked(process.execPath, [CLI, 'listen', '--forward-to', forwardTo, ...args], {
    env: { ...process.env, CLOUDPLANE_API_URL: t.url, CLOUDPLANE_API_KEY: key },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const ready = await eventually(async () => /Ready! Your webhook signing secret is (whsec_\S+) \(listener (wh_[^;]+);/.exec(output), 15_000);
  return { child, output: () => output, secret: ready[1], listenerId: ready[2], exited };
}

/** A receiver that checks every request's signature with `secret()` and answers by `decide` when it holds. */
async function verifyingReceiver(secret: () => string, decide: (request: Received, index: number) => number = () => 200) {
  const verified: Array<{ id: string; type: string; body: any; headers: Received['headers'] }> = [];
  const refused: Received[] = [];
  const receiver = await startReceiver((request, index) => {
    try {
      new Webhook(secret()).verify(request.body, request.headers as Record<string, string>);
    } catch {
      refused.push(request);
      return { status: 400 };
    }
    const body = JSON.parse(request.body);
    verified.push({ id: String(request.headers['webhook-id']), type: body.type, body, headers: request.headers });
    return { status: decide(request, index) };
  });
  return { receiver, verified, refused };
}

describe('cloudplane listen', () => {
  let t: TestService;
  const receivers: Receiver[] = [];
  const clis: RunningCli[] = [];

  beforeAll(async () => {
    t = await startTestService({
      CLOUDPLANE_WEBHOOK_LISTENER_LEASE_SECONDS: String(LEASE_SECONDS),
      CLOUDPLANE_WEBHOOK_TIME_SCALE: '0.01',
      // A stream's unanswered attempt fails after this plus 5 s.
      CLOUDPLANE_WEBHOOK_TIMEOUT_MS: '1000',
      // Only for the witness subscription of the lease test; the listener needs neither.
      CLOUDPLANE_WEBHOOK_ALLOW_HTTP: 'true',
      CLOUDPLANE_WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    });
  });

  afterAll(async () => {
    for (const cli of clis) if (cli.child.exitCode === null) cli.child.kill('SIGKILL');
    for (const receiver of receivers) await receiver.close();
    await t.stop();
  });

  const deliveriesOf = async (listenerId: string) => {
    const res = await t.api('GET', `/api/v1/webhooks/${listenerId}/deliveries?limit=100`);
    expect(res.status).toBe(200);
    return res.body.data as Array<{
      id: string;
      event_id: string;
      event_type: string;
      status: string;
      attempt: string;
      response_status: number | null;
      error: string | null;
    }>;
  };

  it("forwards a load balancer's events, signed with the printed secret, exactly as an HTTP attempt, and Ctrl-C removes the listener", async () => {
    let secret = '';
    const { receiver, verified, refused } = await verifyingReceiver(() => secret);
    receivers.push(receiver);
    const cli = await startCli(t, receiver.url, ['--events', 'load_balancer.*']);
    clis.push(cli);
    secret = cli.secret;
    expect(cli.output().match(/whsec_/g)).toHaveLength(1);

    const listener = await t.api('GET', `/api/v1/webhooks/${cli.listenerId}`);
    expect(listener.body.data).toMatchObject({ url: `listen:${receiver.url}`, events: ['load_balancer.*'], status: 'active' });
    expect(JSON.stringify(listener.body)).not.toContain(secret);

    const lb = await t.api('POST', '/api/v1/load-balancers', { name: 'listened', region: 'fra1' });
    expect(lb.status).toBe(201);
    const running = await eventually(async () => verified.find((v) => v.type === 'load_balancer.running' && v.body.data.id === lb.body.data.id), 20_000);
    const created = verified.find((v) => v.type === 'load_balancer.created' && v.body.data.id === lb.body.data.id)!;
    expect(created).toBeDefined();
    expect(refused).toHaveLength(0);
    // The headers an HTTP attempt carries: both signature families, the spec's own, the transport's.
    expect(running.headers).toMatchObject({
      'x-service-event': 'load_balancer.running',
      'x-service-delivery': running.id,
      'content-type': 'application/json',
      'user-agent': 'Cloudplane-Webhooks/1',
    });
    expect(running.headers['x-service-signature']).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);

    // One line per delivery, and the history shows each succeeded at the first attempt with the receiver's status.
    await eventually(async () => cli.output().includes(`load_balancer.running  ${running.id}  attempt 1  -> 200`));
    const history = await eventually(async () => {
      const rows = await deliveriesOf(cli.listenerId);
      const row = rows.find((d) => d.id === running.id);
      return row?.status === 'succeeded' ? rows : null;
    });
    expect(history.find((d) => d.id === running.id)).toMatchObject({ event_type: 'load_balancer.running', attempt: '1/15', response_status: 200, error: null });
    expect(history.find((d) => d.id === created.id)).toMatchObject({ status: 'succeeded', response_status: 200 });

    // A manual retry goes down the stream as one more attempt.
    const retried = await t.api('POST', `/api/v1/webhooks/${cli.listenerId}/deliveries/${running.id}/retry`);
    expect(retried.status).toBe(202);
    await eventually(async () => cli.output().includes(`load_balancer.running  ${running.id}  attempt 2  -> 200`));
    await eventually(async () => {
      const row = (await deliveriesOf(cli.listenerId)).find((d) => d.id === running.id);
      return row?.status === 'succeeded' && row.attempt === '2/15';
    });
    expect(verified.filter((v) => v.id === running.id)).toHaveLength(2);

    cli.child.kill('SIGINT');
    expect(await cli.exited).toBe(0);
    expect(cli.output()).toContain(`Listener ${cli.listenerId} removed.`);
    expect((await t.api('GET', `/api/v1/webhooks/${cli.listenerId}`)).body.data.status).toBe('deleted');
  });

  it("records the local receiver's failures in the delivery history and retries on the schedule until it succeeds", async () => {
    let secret = '';
    const answers = new Map<string, number>();
    // Each delivery fails twice (500), then succeeds.
    const { receiver, verified } = await verifyingReceiver(
      () => secret,
      (request) => {
        const id = String(request.headers['webhook-id']);
        const seen = (answers.get(id) ?? 0) + 1;
        answers.set(id, seen);
        return seen <= 2 ? 500 : 200;
      },
    );
    receivers.push(receiver);
    const cli = await startCli(t, receiver.url, ['--events', 'load_balancer.created']);
    clis.push(cli);
    secret = cli.secret;

    const lb = await t.api('POST', '/api/v1/load-balancers', { name: 'flaky-receiver', region: 'fra1' });
    const deliveryId = await eventually(async () => verified.find((v) => v.body.data.id === lb.body.data.id)?.id);
    const done = await eventually(async () => {
      const row = (await deliveriesOf(cli.listenerId)).find((d) => d.id === deliveryId);
      return row?.status === 'succeeded' ? row : null;
    }, 20_000);
    expect(done).toMatchObject({ attempt: '3/15', response_status: 200, error: null });
    // The same delivery (one webhook-id) three times, each signed.
    expect(verified.filter((v) => v.id === deliveryId)).toHaveLength(3);
    expect(cli.output()).toContain(`${deliveryId}  attempt 1  -> 500`);
    expect(cli.output()).toContain(`${deliveryId}  attempt 2  -> 500`);
    expect(cli.output()).toContain(`${deliveryId}  attempt 3  -> 200`);
    cli.child.kill('SIGINT');
    expect(await cli.exited).toBe(0);
  });

  it('a receiver that is down is a failed attempt with its reason, retried', async () => {
    const down = await startReceiver();
    const url = down.url;
    await down.close();
    const cli = await startCli(t, url, ['--events', 'load_balancer.created']);
    clis.push(cli);
    const lb = await t.api('POST', '/api/v1/load-balancers', { name: 'nobody-home', region: 'fra1' });
    const row = await eventually(async () => {
      const rows = await deliveriesOf(cli.listenerId);
      return rows.find((d) => d.status === 'pending' && Number(d.attempt.split('/')[0]) >= 2) ?? null;
    }, 20_000);
    expect(row.error).toMatch(/^listener: ECONNREFUSED/);
    expect(row.response_status).toBeNull();
    expect(lb.status).toBe(201);
    cli.child.kill('SIGINT');
    expect(await cli.exited).toBe(0);
  });

  it('a CLI killed with SIGKILL: the lease lapses, the listener is deleted and gets no more deliveries', async () => {
    let secret = '';
    // The receiver refuses one load balancer's event for ever: its delivery is pending, on the schedule, when the CLI dies.
    const { receiver, verified } = await verifyingReceiver(
      () => secret,
      (request) => (JSON.parse(request.body).data.name === 'failing-at-kill' ? 500 : 200),
    );
    receivers.push(receiver);
    const cli = await startCli(t, receiver.url, ['--events', 'load_balancer.created']);
    clis.push(cli);
    secret = cli.secret;
    const first = await t.api('POST', '/api/v1/load-balancers', { name: 'before-kill', region: 'fra1' });
    await eventually(async () => verified.some((v) => v.body.data.id === first.body.data.id));
    const failing = await t.api('POST', '/api/v1/load-balancers', { name: 'failing-at-kill', region: 'fra1' });
    const pendingId = await eventually(async () => {
      const row = (await deliveriesOf(cli.listenerId)).find((d) => d.status === 'pending' && d.response_status === 500);
      return row?.id;
    });
    expect(failing.status).toBe(201);

    cli.child.kill('SIGKILL');
    await cli.exited;
    const gone = await eventually(async () => {
      const res = await t.api('GET', `/api/v1/webhooks/${cli.listenerId}`);
      return res.body.data.status === 'deleted' ? res.body.data : null;
    }, 20_000);
    expect(gone.active).toBe(false);

    // A witness subscription shows when the next event has been dispatched.
    const witness = await startReceiver();
    receivers.push(witness);
    const sub = await t.api('POST', '/api/v1/webhooks', { url: witness.url, events: ['load_balancer.created'] });
    expect(sub.status).toBe(201);
    const after = await t.api('POST', '/api/v1/load-balancers', { name: 'after-kill', region: 'fra1' });
    await eventually(async () => witness.received.some((r) => JSON.parse(r.body).data.id === after.body.data.id));
    const history = await deliveriesOf(cli.listenerId);
    expect(history).toHaveLength(2);
    // What was pending when the listener went ends failed, as for a deleted subscription.
    const ended = await eventually(async () => (await deliveriesOf(cli.listenerId)).find((d) => d.id === pendingId && d.status === 'failed'));
    expect(ended.error).toBe('the subscription was deleted');
    expect(verified.some((v) => v.body.data.id === after.body.data.id)).toBe(false);
    // The stream of a deleted listener cannot be attached again.
    const again = await request(t.url, 'GET', `/api/v1/webhooks/${cli.listenerId}/stream`, undefined, { key: t.key });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('invalid_state');
    await t.api('DELETE', `/api/v1/webhooks/${sub.body.data.id}`);
  });

  it("another team's key can neither attach to the stream nor report an answer, and its own listener gets none of our events", async () => {
    const created = await t.api('POST', '/api/v1/teams', { name: 'Other team', owner_email: 'owner@other.example' });
    expect(created.status).toBe(201);
    const otherKey = created.body.data.api_key.key as string;
    let ourSecret = '';
    const ours = await verifyingReceiver(() => ourSecret);
    receivers.push(ours.receiver);
    const cli = await startCli(t, ours.receiver.url, ['--events', 'load_balancer.created']);
    clis.push(cli);
    ourSecret = cli.secret;

    const stream = await request(t.url, 'GET', `/api/v1/webhooks/${cli.listenerId}/stream`, undefined, { key: otherKey });
    expect(stream.status).toBe(404);
    expect(stream.body.error.code).toBe('webhook_not_found');
    const answer = await request(
      t.url,
      'POST',
      `/api/v1/webhooks/${cli.listenerId}/deliveries/del_00000000000000000000/answer`,
      { attempt: 1, response_status: 200 },
      { key: otherKey },
    );
    expect(answer.status).toBe(404);

    let theirSecret = '';
    const theirs = await verifyingReceiver(() => theirSecret);
    receivers.push(theirs.receiver);
    const other = await startCli(t, theirs.receiver.url, ['--events', 'load_balancer.created'], otherKey);
    clis.push(other);
    theirSecret = other.secret;
    const lb = await t.api('POST', '/api/v1/load-balancers', { name: 'not-theirs', region: 'fra1' });
    await eventually(async () => ours.verified.some((v) => v.body.data.id === lb.body.data.id));
    const theirHistory = await request(t.url, 'GET', `/api/v1/webhooks/${other.listenerId}/deliveries`, undefined, { key: otherKey });
    expect(theirHistory.body.data).toHaveLength(0);
    expect(theirs.receiver.received).toHaveLength(0);
    for (const running of [cli, other]) {
      running.child.kill('SIGINT');
      expect(await running.exited).toBe(0);
    }
  });

  it('a bad key is refused with its code (exit 4, as every command), a bad --forward-to a usage error (exit 2)', async () => {
    const refused = spawnTracked(process.execPath, [CLI, 'listen', '--forward-to', 'http://127.0.0.1:9/hook'], {
      env: { ...process.env, CLOUDPLANE_API_URL: t.url, CLOUDPLANE_API_KEY: 'cpk_not_a_key' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let err = '';
    refused.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString()));
    expect(await new Promise((resolve) => refused.once('exit', resolve))).toBe(4);
    expect(err).toMatch(/^Error: unauthorized: /m);
    // Bad usage is told apart from an API error, and nothing is made.
    const before = (await t.api('GET', '/api/v1/webhooks?limit=100')).body.data.length;
    const usage = spawnTracked(process.execPath, [CLI, 'listen', '--forward-to', 'ftp://127.0.0.1/hook'], {
      env: { ...process.env, CLOUDPLANE_API_URL: t.url, CLOUDPLANE_API_KEY: t.key },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let usageErr = '';
    usage.stderr!.on('data', (chunk: Buffer) => (usageErr += chunk.toString()));
    expect(await new Promise((resolve) => usage.once('exit', resolve))).toBe(2);
    expect(usageErr).toContain('--forward-to must be an http or https URL');
    expect((await t.api('GET', '/api/v1/webhooks?limit=100')).body.data.length).toBe(before);
  });

  it('the stream protocol: ready, signed deliveries, an unanswered attempt failing on the timeout, and a newer stream taking over', async () => {
    const created = await t.api('POST', '/api/v1/webhooks/listeners', { events: ['load_balancer.created'] });
    expect(created.status).toBe(201);
    const { id, secret } = created.body.data;
    expect(created.body.data.url).toBe('listen:cli');
    const open = async () => {
      const response = await fetch(`${t.url}/api/v1/webhooks/${id}/stream`, { headers: { authorization: `Bearer ${t.key}` } });
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
      const events: Array<{ event: string; data: any }> = [];
      const reading = (async () => {
        for await (const event of serverSentEvents(response.body!)) events.push({ event: event.event, data: JSON.parse(event.data) });
      })().catch(() => undefined);
      return { events, reading };
    };
    const first = await open();
    await eventually(async () => first.events.some((e) => e.event === 'ready' && e.data.listener_id === id));
    const lb = await t.api('POST', '/api/v1/load-balancers', { name: 'unanswered', region: 'fra1' });
    const pushed = await eventually(async () => first.events.find((e) => e.event === 'delivery'));
    expect(pushed.data).toMatchObject({ attempt: 1, event_type: 'load_balancer.created', timeout_ms: 1000 });
    expect(JSON.parse(pushed.data.body).data.id).toBe(lb.body.data.id);
    expect(() => new Webhook(secret).verify(pushed.data.body, pushed.data.headers)).not.toThrow();
    // Never answered: a failed attempt on the schedule, then pushed again as attempt 2.
    const failed = await eventually(async () => {
      const rows = await deliveriesOf(id);
      return rows.find((d) => d.id === pushed.data.delivery_id && d.error?.startsWith('the listener reported no answer within 6 s'));
    }, 20_000);
    expect(failed.response_status).toBeNull();
    await eventually(async () => first.events.some((e) => e.event === 'delivery' && e.data.attempt === 2), 20_000);
    // A late answer to attempt 1 is refused; the answer to the attempt out now is recorded.
    const late = await t.api('POST', `/api/v1/webhooks/${id}/deliveries/${pushed.data.delivery_id}/answer`, { attempt: 1, response_status: 200 });
    expect(late.status).toBe(409);
    const second = await open();
    await eventually(async () => first.events.some((e) => e.event === 'closed' && e.data.reason === 'another connection took this listener over'));
    await eventually(async () => second.events.some((e) => e.event === 'ready'));
    // The newer stream gets what falls due from now on.
    const next = await t.api('POST', '/api/v1/load-balancers', { name: 'to-the-newer-stream', region: 'fra1' });
    await eventually(async () => second.events.some((e) => e.event === 'delivery' && JSON.parse(e.data.body).data.id === next.body.data.id));
    expect((await t.api('DELETE', `/api/v1/webhooks/${id}`)).status).toBe(200);
    await eventually(async () => second.events.some((e) => e.event === 'closed' && e.data.reason === 'the listener was deleted'));
    await Promise.all([first.reading, second.reading]);
  }, 60_000);

  it("refuses a read_only key the stream (403), and the holder's stream is not taken over", async () => {
    const created = await t.api('POST', '/api/v1/webhooks/listeners', { events: ['load_balancer.created'] });
    const { id, secret } = created.body.data;
    const holder = await fetch(`${t.url}/api/v1/webhooks/${id}/stream`, { headers: { authorization: `Bearer ${t.key}` } });
    expect(holder.status).toBe(200);
    const events: Array<{ event: string; data: any }> = [];
    const reading = (async () => {
      for await (const event of serverSentEvents(holder.body!)) events.push({ event: event.event, data: JSON.parse(event.data) });
    })().catch(() => undefined);
    await eventually(async () => events.some((e) => e.event === 'ready'));

    const readOnly = (await t.api('POST', '/api/v1/settings/api-keys', { name: 'dashboards', scope: 'read_only' })).body.data.key as string;
    // Not read as text: on a 200 the body would be the stream itself, never ending.
    const aborted = new AbortController();
    const attempt = await fetch(`${t.url}/api/v1/webhooks/${id}/stream`, { headers: { authorization: `Bearer ${readOnly}` }, signal: aborted.signal });
    const status = attempt.status;
    const body: any = status === 200 ? null : await attempt.json();
    aborted.abort();
    expect(status).toBe(403);
    expect(body.error.code).toBe('forbidden');

    // The holder keeps the listener: no `closed`, and the next delivery, signed, comes to it.
    const lb = await t.api('POST', '/api/v1/load-balancers', { name: 'still-ours', region: 'fra1' });
    const delivered = await eventually(async () => events.find((e) => e.event === 'delivery' && JSON.parse(e.data.body).data.id === lb.body.data.id));
    expect(() => new Webhook(secret).verify(delivered.data.body, delivered.data.headers)).not.toThrow();
    expect(events.some((e) => e.event === 'closed')).toBe(false);
    await t.api('DELETE', `/api/v1/webhooks/${id}`);
    await reading;
  }, 60_000);

  it('has at most 16 deliveries out unanswered on a stream; the others follow as answers come', async () => {
    const created = await t.api('POST', '/api/v1/webhooks/listeners', { events: ['server.created'] });
    const { id } = created.body.data;
    const response = await fetch(`${t.url}/api/v1/webhooks/${id}/stream`, { headers: { authorization: `Bearer ${t.key}` } });
    const pushed: any[] = [];
    const reading = (async () => {
      for await (const event of serverSentEvents(response.body!)) if (event.event === 'delivery') pushed.push(JSON.parse(event.data));
    })().catch(() => undefined);
    const servers = await Promise.all(Array.from({ length: 20 }, (_, i) => t.api('POST', '/api/v1/servers', { name: `burst-${i}`, region: 'fra1' })));
    expect(servers.map((r) => r.status)).toEqual(Array(20).fill(201));
    await eventually(async () => (await deliveriesOf(id)).length === 20);
    await eventually(async () => pushed.length === 16);
    // Answering one lets one more out, until all 20 are answered.
    const answered = new Set<string>();
    await eventually(async () => {
      for (const delivery of pushed.filter((d) => !answered.has(d.delivery_id))) {
        answered.add(delivery.delivery_id);
        const res = await t.api('POST', `/api/v1/webhooks/${id}/deliveries/${delivery.delivery_id}/answer`, {
          attempt: delivery.attempt,
          response_status: 204,
        });
        expect(res.status).toBe(200);
        expect(res.body.data).toMatchObject({ status: 'succeeded', response_status: 204 });
      }
      return answered.size === 20;
    }, 20_000);
    expect(new Set(pushed.map((d) => d.delivery_id)).size).toBe(20);
    expect(pushed).toHaveLength(20);
    await t.api('DELETE', `/api/v1/webhooks/${id}`);
    await reading;
  }, 60_000);

  it('refuses to change a listener or rotate its secret, and a plain subscription has no stream', async () => {
    const cli = await startCli(t, 'http://127.0.0.1:9/hook', ['--events', 'server.*']);
    clis.push(cli);
    const patch = await t.api('PATCH', `/api/v1/webhooks/${cli.listenerId}`, { url: 'https://example.com/hook' });
    expect(patch.status).toBe(409);
    expect((await t.api('POST', `/api/v1/webhooks/${cli.listenerId}/rotate-secret`)).status).toBe(409);
    const plain = await t.api('POST', '/api/v1/webhooks', { url: 'https://example.com/hook', events: ['server.*'] });
    const stream = await t.api('GET', `/api/v1/webhooks/${plain.body.data.id}/stream`);
    expect(stream.status).toBe(409);
    await t.api('DELETE', `/api/v1/webhooks/${plain.body.data.id}`);
    cli.child.kill('SIGINT');
    expect(await cli.exited).toBe(0);
  });
});

/**
 * The embedded service as a process, stopped (SIGTERM) and started again on its data
 * directory and port while the CLI runs: the stream is ended for the shutdown (which does
 * not wait on it), the CLI reconnects to the same listener, and deliveries resume.
 */
describe('cloudplane listen across a restart of the service', () => {
  const KEY = 'cpk_ListenRestart01234567890abcdefghijABCDEFGH';
  let service: ChildService | null = null;
  let cli: RunningCli | null = null;
  let receiver: Receiver | null = null;

  afterAll(async () => {
    if (cli && cli.child.exitCode === null) cli.child.kill('SIGKILL');
    await receiver?.close();
    await service?.kill();
  });

  it('ends the stream on shutdown, and the CLI carries on with the same listener once the service is back', async () => {
    const dataDir = tempDataDir();
    const port = await freePort();
    const start = () =>
      startChildService({
        dataDir,
        key: KEY,
        env: { CLOUDPLANE_PORT: String(port), CLOUDPLANE_SIM_DELAY_MS: '50', CLOUDPLANE_WEBHOOK_LISTENER_LEASE_SECONDS: '60' },
      });
    service = await start();
    let secret = '';
    const verifying = await verifyingReceiver(() => secret);
    receiver = verifying.receiver;
    cli = await startCli({ url: service.url, key: KEY }, receiver.url, ['--events', 'load_balancer.created']);
    secret = cli.secret;
    const before = await service.api('POST', '/api/v1/load-balancers', { name: 'before-restart', region: 'fra1' });
    await eventually(async () => verifying.verified.some((v) => v.body.data.id === before.body.data.id));

    expect(await service.stop()).toBe(0);
    await eventually(async () => cli!.output().includes('reconnecting'));
    service = await start();
    const after = await service.api('POST', '/api/v1/load-balancers', { name: 'after-restart', region: 'fra1' });
    expect(after.status).toBe(201);
    const delivered = await eventually(async () => verifying.verified.find((v) => v.body.data.id === after.body.data.id), 30_000);
    await eventually(async () => {
      const res = await service!.api('GET', `/api/v1/webhooks/${cli!.listenerId}/deliveries/${delivered.id}`);
      return res.body.data?.status === 'succeeded';
    });
    expect(cli.child.exitCode).toBeNull();
    cli.child.kill('SIGINT');
    expect(await cli.exited).toBe(0);
  }, 120_000);
});

/**
 * Cluster mode with two replicas: the leader makes the deliveries and reaps lapsed leases;
 * the CLI holds its stream on the other replica, which signs and pushes the attempts and
 * records their answers. Its own API server, so it runs whichever store the suite is on.
 */
describe('cloudplane listen against two replicas in cluster mode', () => {
  const KEY = 'cpk_ListenReplicas0123456789abcdefghijABCDEFGH';
  let kube: KubeApiServer;
  const replicas: ChildService[] = [];
  const receivers: Receiver[] = [];
  const clis: RunningCli[] = [];

  const startReplica = (name: string) =>
    startChildService({
      dataDir: tempDataDir(),
      key: KEY,
      startTimeoutMs: 60_000,
      env: {
        ...storeEnvFor(kube),
        POD_NAME: name,
        CLOUDPLANE_LEASE_DURATION_SECONDS: '5',
        CLOUDPLANE_SIM_DELAY_MS: '50',
        CLOUDPLANE_WEBHOOK_LISTENER_LEASE_SECONDS: String(LEASE_SECONDS),
        CLOUDPLANE_WEBHOOK_TIME_SCALE: '0.01',
        // Every log line, to look for the secret in.
        CLOUDPLANE_LOG_LEVEL: 'debug',
      },
    }).then((replica) => {
      replicas.push(replica);
      for (const pipe of [replica.child.stdout, replica.child.stderr]) pipe?.on('data', (chunk: Buffer) => logs.push(chunk));
      return replica;
    });
  const logs: Buffer[] = [];

  const leads = async (replica: ChildService) => /^cloudplane_leader 1$/m.test((await replica.api('GET', '/metrics')).body as string);

  beforeAll(async () => {
    kube = await startKubeApiServer();
    await installCrds(kube);
  }, 120_000);

  afterAll(async () => {
    for (const cli of clis) if (cli.child.exitCode === null) cli.child.kill('SIGKILL');
    for (const receiver of receivers) await receiver.close();
    for (const replica of replicas) await replica.kill();
    await kube?.stop();
  });

  it('delivers through the replica holding the stream, records answers and retries, and the leader reaps the listener of a killed CLI', async () => {
    const first = await startReplica('cloudplane-a');
    await eventually(() => leads(first), 60_000, 200);
    const second = await startReplica('cloudplane-b');
    // The stream goes to the replica that does not dispatch.
    expect(await leads(second)).toBe(false);

    let secret = '';
    const seen = new Map<string, number>();
    const { receiver, verified, refused } = await verifyingReceiver(
      () => secret,
      (request) => {
        const id = String(request.headers['webhook-id']);
        seen.set(id, (seen.get(id) ?? 0) + 1);
        return seen.get(id) === 1 ? 503 : 200;
      },
    );
    receivers.push(receiver);
    const cli = await startCli({ url: second.url, key: KEY }, receiver.url, ['--events', 'load_balancer.created']);
    clis.push(cli);
    secret = cli.secret;

    const lb = await first.api('POST', '/api/v1/load-balancers', { name: 'two-replicas', region: 'fra1' });
    expect(lb.status).toBe(201);
    const delivered = await eventually(async () => verified.find((v) => v.body.data.id === lb.body.data.id && seen.get(v.id) === 2), 60_000);
    expect(refused).toHaveLength(0);
    const row = await eventually(async () => {
      const res = await first.api('GET', `/api/v1/webhooks/${cli.listenerId}/deliveries/${delivered.id}`);
      return res.body.data?.status === 'succeeded' ? res.body.data : null;
    }, 30_000);
    expect(row).toMatchObject({ attempt: '2/15', response_status: 200 });

    cli.child.kill('SIGKILL');
    await cli.exited;
    const gone = await eventually(
      async () => {
        const res = await first.api('GET', `/api/v1/webhooks/${cli.listenerId}`);
        return res.body.data.status === 'deleted' ? res.body.data : null;
      },
      60_000,
      200,
    );
    expect(gone.active).toBe(false);

    // The secret was shown once, to the CLI: not in any replica's log, nor in the audit log or the events.
    const audit = await first.api('GET', '/api/v1/audit-log?limit=100');
    expect(audit.status).toBe(200);
    const needles = [{ label: 'the listener secret', value: secret }];
    expect(findIn("the replicas' logs", Buffer.concat(logs), needles)).toEqual([]);
    expect(findIn('the audit log', Buffer.from(JSON.stringify(audit.body)), needles)).toEqual([]);
    expect(findIn('the deliveries', Buffer.from(JSON.stringify(verified.map((v) => v.body))), needles)).toEqual([]);
    expect(Buffer.concat(logs).toString()).toContain(cli.listenerId);
  }, 180_000);
});
