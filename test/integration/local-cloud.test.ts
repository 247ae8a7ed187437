/**
 * The local cloud of a client's own tests (docs/testing.md), used as a client uses it: a
 * separate Node program that requires `cloudplane/testing` from the built package, starts a
 * local cloud, breaks it on purpose through the simulation API, sees the resource fail with
 * the reason asked, and stops it, which removes its data directory.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';

jest.setTimeout(60_000);

const REPO = path.resolve(__dirname, '../..');

/** What the client program does: everything a test suite of theirs would, reported as one JSON line. */
const CLIENT = `
const { startLocalCloud } = require('cloudplane/testing');
(async () => {
  const cloud = await startLocalCloud({ env: { CLOUDPLANE_SIM_DELAY_MS: '50' } });
  const call = async (method, path, body) => {
    const res = await fetch(cloud.url + '/api/v1' + path, {
      method,
      headers: { authorization: 'Bearer ' + cloud.apiKey, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: await res.json() };
  };
  const fault = await call('POST', '/simulation/faults', { family: 'server', operation: 'provision', error: 'no capacity in fra1' });
  const server = await call('POST', '/servers', { name: 'client-test', region: 'fra1' });
  let record;
  for (let i = 0; i < 400; i++) {
    record = (await call('GET', '/servers/' + server.body.data.id)).body.data;
    if (record.status === 'failed') break;
    await new Promise((r) => setTimeout(r, 25));
  }
  const dataDir = cloud.dataDir;
  await cloud.stop();
  console.log(JSON.stringify({ url: cloud.url, fault: fault.status, server: server.status, status: record.status, reason: record.status_reason, dataDir }));
})().catch((err) => { console.error(err); process.exit(1); });
`;

function runClient(): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', CLIENT], { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

it("a client's program starts a local cloud from cloudplane/testing, breaks it on purpose, and stops it without a trace", async () => {
  const { code, stdout, stderr } = await runClient();
  expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
  const report = JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}');
  expect(report).toMatchObject({ fault: 201, server: 201, status: 'failed' });
  expect(report.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  expect(report.reason).toContain('no capacity in fra1');
  expect(existsSync(report.dataDir)).toBe(false);
});
