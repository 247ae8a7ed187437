/**
 * The access log: one line per answered request (method, URL, status, time), at
 * CLOUDPLANE_REQUEST_LOG_LEVEL: below the service's level it is not written at all, so
 * `make run` (info, requests at debug) shows the banner and warnings only.
 */
import { loadConfig } from '../../src/config';
import { startTestService, TestService } from '../helpers/service';

async function logged(env: Record<string, string>, run: (t: TestService) => Promise<void>): Promise<Array<Record<string, any>>> {
  const lines: string[] = [];
  const t = await startTestService({ CLOUDPLANE_LOG_LEVEL: 'info', ...env }, undefined, { write: (line) => lines.push(line) });
  try {
    await run(t);
  } finally {
    await t.stop();
  }
  return lines
    .join('')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line));
}

describe('the request log', () => {
  it('is at debug on the embedded store and at info on the Kubernetes store, unless set', () => {
    expect(loadConfig({}).requestLogLevel).toBe('debug');
    expect(loadConfig({ CLOUDPLANE_STORE: 'kubernetes' }).requestLogLevel).toBe('info');
    expect(loadConfig({ CLOUDPLANE_REQUEST_LOG_LEVEL: 'info' }).requestLogLevel).toBe('info');
    expect(() => loadConfig({ CLOUDPLANE_REQUEST_LOG_LEVEL: 'loud' })).toThrow(/CLOUDPLANE_REQUEST_LOG_LEVEL must be one of trace, debug, info, got "loud"/);
  });

  it('writes one line per answered request at its level, with the status and without the key', async () => {
    let key = '';
    const entries = await logged({ CLOUDPLANE_REQUEST_LOG_LEVEL: 'info' }, async (t) => {
      key = t.key;
      expect((await t.api('GET', '/api/v1/regions')).status).toBe(200);
      expect((await t.api('GET', '/api/v1/load-balancers/lb_nothing')).status).toBe(404);
    });
    const requests = entries.filter((entry) => entry.msg === 'request completed' && String(entry.req?.url).startsWith('/api/v1/'));
    expect(requests.map((entry) => [entry.req.method, entry.req.url, entry.res.statusCode])).toEqual([
      ['GET', '/api/v1/regions', 200],
      ['GET', '/api/v1/load-balancers/lb_nothing', 404],
    ]);
    for (const entry of requests) expect(entry).toMatchObject({ level: 30, reqId: expect.stringMatching(/^req_/), responseTime: expect.any(Number) });
    expect(entries.filter((entry) => entry.msg === 'incoming request')).toEqual([]);
    expect(JSON.stringify(entries)).not.toContain(key);
  });

  it('writes none below the service level: the embedded default at info logs no request', async () => {
    const entries = await logged({ CLOUDPLANE_REQUEST_LOG_LEVEL: 'debug' }, async (t) => {
      expect((await t.api('GET', '/api/v1/regions')).status).toBe(200);
    });
    expect(entries.filter((entry) => /request/.test(String(entry.msg)))).toEqual([]);
  });
});
