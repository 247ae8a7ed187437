/**
 * The real service (a child process) whose log output fails: stdout on /dev/full, where
 * every write answers ENOSPC, and stdout a pipe whose reader has gone (EPIPE). Logging
 * is best-effort: the service keeps serving, and says once on stderr that log lines are
 * being lost.
 */
import fs from 'node:fs';
import { startChildService, ChildService } from '../helpers/child-service';
import { tempDataDir } from '../helpers/service';

jest.setTimeout(120_000);

const KEY = 'cpk_LogOutputTest0123456789abcdefghijABCDEF';
/** info, requests included: every request writes a log line. */
const ENV = { CLOUDPLANE_LOG_LEVEL: 'info', CLOUDPLANE_REQUEST_LOG_LEVEL: 'info', CLOUDPLANE_SIM_DELAY_MS: '100' };
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const alive = (svc: ChildService) => svc.child.exitCode === null && svc.child.signalCode === null;

/** Requests that each make the service log, with pauses so its asynchronous log writes fail in between. */
async function keepsServing(svc: ChildService): Promise<void> {
  for (let i = 0; i < 20; i++) {
    const created = await svc.api('POST', '/api/v1/load-balancers', { name: `log-${i}`, region: 'fra1' });
    expect(created.status).toBe(201);
    expect((await svc.api('GET', `/api/v1/load-balancers/${created.body.data.id}`)).status).toBe(200);
    await sleep(50);
  }
  await sleep(500);
  expect(alive(svc)).toBe(true);
  expect((await svc.api('GET', '/api/v1/load-balancers?limit=1')).status).toBe(200);
}

describe('log output that fails (real service)', () => {
  const children: ChildService[] = [];
  afterAll(async () => {
    for (const child of children) await child.kill();
  });

  it('keeps serving while stdout answers ENOSPC (/dev/full), and says so on stderr', async () => {
    const full = fs.openSync('/dev/full', 'w');
    try {
      const svc = await startChildService({ dataDir: tempDataDir(), key: KEY, env: ENV, stdoutFd: full });
      children.push(svc);
      await keepsServing(svc);
      expect(svc.output()).toMatch(/log output failed.*ENOSPC/);
    } finally {
      fs.closeSync(full);
    }
  });

  it('keeps serving once the reader of its stdout pipe has gone (EPIPE)', async () => {
    const svc = await startChildService({ dataDir: tempDataDir(), key: KEY, env: ENV });
    children.push(svc);
    svc.child.stdout!.destroy();
    await keepsServing(svc);
    expect(svc.output()).toMatch(/log output failed.*EPIPE/);
  });
});
