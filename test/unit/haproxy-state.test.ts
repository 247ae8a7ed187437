/**
 * Reading HAProxy's stats: the status words it uses map onto up, drain, down and
 * maintenance as HAProxy routes them, fields it quotes are read whole, and a desired
 * backend HAProxy does not list is not up. The traffic counters are read from stats CSV
 * that HAProxy 2.6 (Debian's, as the tests run) served after real requests
 * (test/fixtures/haproxy-2.6-stats.csv: the renderer's stats and public frontends and
 * servers backend, eight requests through it, a third server down). The data-plane test
 * reads the same code from a running HAProxy; these cover the words a test cannot easily
 * provoke.
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { LoadBalancerDesired } from '../../src/drivers/load-balancer';
import {
  backendHealth,
  httpStatsSource,
  parseServerStats,
  parseStats,
  readServerStats,
  serverState,
  StatsSource,
  summedTraffic,
} from '../../src/drivers/haproxy/state';

const REAL_CSV = fs.readFileSync(path.join(__dirname, '../fixtures/haproxy-2.6-stats.csv'), 'utf8');
const ZERO = { sessions_total: 0, bytes_in: 0, bytes_out: 0, current_sessions: 0 };

const HEADER =
  '# pxname,svname,qcur,qmax,scur,smax,slim,stot,bin,bout,dreq,dresp,ereq,econ,eresp,wretr,wredis,status,weight,act,bck,chkfail,chkdown,lastchg,downtime,qlimit,pid,iid,sid,throttle,lbtot,tracked,type,rate,rate_lim,rate_max,check_status,check_code,check_duration,hrsp_1xx,last_chk,';

/** A stats row with the given name, status, weight and check fields (the rest empty). */
function row(proxy: string, server: string, status: string, weight: string, checkStatus = '', lastCheck = ''): string {
  const columns = HEADER.slice(2).split(',');
  const fields = columns.map(() => '');
  const set = (name: string, value: string) => (fields[columns.indexOf(name)] = value);
  set('pxname', proxy);
  set('svname', server);
  set('status', status);
  set('weight', weight);
  set('check_status', checkStatus);
  set('last_chk', lastCheck);
  return fields.join(',');
}

describe('HAProxy state', () => {
  it('maps status words as HAProxy routes them', () => {
    expect(serverState('UP', 1)).toBe('up');
    expect(serverState('UP 1/2', 1)).toBe('up'); // failing, not yet taken out
    expect(serverState('UP', 0)).toBe('drain'); // weight 0: a draining backend
    expect(serverState('DRAIN', 1)).toBe('drain');
    expect(serverState('NOLB', 1)).toBe('drain');
    expect(serverState('no check', 1)).toBe('up');
    expect(serverState('DOWN', 1)).toBe('down');
    expect(serverState('DOWN 1/2', 1)).toBe('down'); // recovering, not yet back
    expect(serverState('MAINT', 1)).toBe('maint');
    expect(serverState('MAINT (via servers/a)', 1)).toBe('maint');
    expect(serverState('', 1)).toBe('down');
  });

  it('reads server rows, leaves out the summaries, and keeps quoted fields whole', () => {
    const csv = [
      HEADER,
      row('public', 'FRONTEND', 'OPEN', ''),
      row('servers', 'svr_a-80', 'UP', '1', 'L7OK'),
      row('servers', 'svr_b-80', 'DOWN', '1', 'L7STS', '"Service, ""Unavailable"""'),
      row('servers', 'BACKEND', 'UP', '1'),
    ].join('\n');
    const stats = parseServerStats(csv);
    expect(stats).toEqual([
      { proxy: 'servers', server: 'svr_a-80', status: 'UP', state: 'up', weight: 1, checkStatus: 'L7OK', traffic: ZERO },
      { proxy: 'servers', server: 'svr_b-80', status: 'DOWN', state: 'down', weight: 1, checkStatus: 'L7STS', traffic: ZERO },
    ]);
    expect(() => parseServerStats('<html>not stats</html>')).toThrow(/no header/);
    expect(() => parseServerStats('# pxname,svname\nx,y')).toThrow(/lacks the column 'status'/);
  });

  it('reports every desired backend, one HAProxy does not list as not up', () => {
    const desired = {
      backends: [
        { server_id: 'svr_a', port: 80, address: '10.0.0.1', draining: false, drain_until: null },
        { server_id: 'svr_b', port: 80, address: '10.0.0.2', draining: true, drain_until: '2030-01-01T00:00:00Z' },
        { server_id: 'svr_c', port: 80, address: null, draining: false, drain_until: null },
        { server_id: 'svr_d', port: 80, address: '10.0.0.4', draining: false, drain_until: null },
      ],
    } as LoadBalancerDesired;
    const stats = parseServerStats(
      [
        HEADER,
        row('servers', 'svr_a-80', 'UP', '1'),
        row('servers', 'svr_b-80', 'UP', '0'),
        row('servers', 'svr_d-80', 'DOWN', '1'),
        row('stats', 'svr_c-80', 'UP', '1'),
      ].join('\n'),
    );
    expect(backendHealth(desired, stats)).toEqual([
      { server_id: 'svr_a', port: 80, up: true },
      { server_id: 'svr_b', port: 80, up: true },
      { server_id: 'svr_c', port: 80, up: false },
      { server_id: 'svr_d', port: 80, up: false },
    ]);
  });

  it('gives up on a source that does not answer in time, and says which', async () => {
    const silent: StatsSource = {
      description: 'a silent source',
      read: (signal) => new Promise((_resolve, reject) => signal.addEventListener('abort', () => reject(signal.reason))),
    };
    await expect(readServerStats(silent, 50)).rejects.toThrow('no stats from a silent source within 50 ms');
  });

  it('reads over HTTP, refusing an answer that is not 200', async () => {
    let answer = 200;
    const server = http.createServer((req, res) => {
      res.statusCode = answer;
      res.end(req.url === '/stats;csv' ? [HEADER, row('servers', 'svr_a-80', 'UP', '1')].join('\n') : 'no');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const source = httpStatsSource(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
      expect((await readServerStats(source)).map((s) => s.server)).toEqual(['svr_a-80']);
      answer = 503;
      await expect(readServerStats(source)).rejects.toThrow(/answered 503/);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it("reads the counters of HAProxy's own CSV: the frontends' and the servers', not the BACKEND summaries", () => {
    const stats = parseStats(REAL_CSV);
    // The stats endpoint's frontend (this very request open) and the public one, as the renderer names them.
    expect(stats.frontends).toEqual([
      { proxy: 'stats', traffic: { sessions_total: 1, bytes_in: 0, bytes_out: 0, current_sessions: 1 } },
      { proxy: 'public', traffic: { sessions_total: 8, bytes_in: 676, bytes_out: 944, current_sessions: 0 } },
    ]);
    expect(stats.servers.map(({ server, state, traffic }) => ({ server, state, traffic }))).toEqual([
      { server: 'svr_5k2m9q7x4h-18081', state: 'up', traffic: { sessions_total: 4, bytes_in: 348, bytes_out: 472, current_sessions: 0 } },
      { server: 'svr_8w3n6p2r1t-18082', state: 'up', traffic: { sessions_total: 4, bytes_in: 328, bytes_out: 472, current_sessions: 0 } },
      { server: 'svr_1a2b3c4d5e-18083', state: 'down', traffic: ZERO },
    ]);
    // What a server row counts adds up to the frontend's: every request went to a backend.
    const sum = (key: 'sessions_total' | 'bytes_in' | 'bytes_out') => stats.servers.reduce((total, s) => total + s.traffic[key], 0);
    expect([sum('sessions_total'), sum('bytes_in'), sum('bytes_out')]).toEqual([8, 676, 944]);
    // parseServerStats is the same reading, the server rows only.
    expect(parseServerStats(REAL_CSV)).toEqual(stats.servers);
  });

  it('refuses a counter that is not a count rather than reading it as some number', () => {
    const csv = [HEADER, row('servers', 'svr_a-80', 'UP', '1')].join('\n').replace('svr_a-80,', 'svr_a-80,,,-1,');
    expect(() => parseStats(csv)).toThrow(/has '-1' as scur/);
  });

  it("sums the public frontend and each desired backend over HAProxy's processes, and lists every desired backend", () => {
    const desired = {
      backends: [
        { server_id: 'svr_5k2m9q7x4h', port: 18081, address: '127.0.0.1', draining: false, drain_until: null },
        { server_id: 'svr_8w3n6p2r1t', port: 18082, address: '127.0.0.1', draining: true, drain_until: '2030-01-01T00:00:00Z' },
        { server_id: 'svr_1a2b3c4d5e', port: 18083, address: '127.0.0.1', draining: false, drain_until: null },
        { server_id: 'svr_nowhere000', port: 80, address: null, draining: false, drain_until: null },
      ],
    } as LoadBalancerDesired;
    const one = parseStats(REAL_CSV);
    // A second process that has seen the same, but sees the first server down.
    const other = parseStats(
      REAL_CSV.replace('svr_5k2m9q7x4h-18081,0,0,0,1,,4,348,472,,0,,0,0,0,0,UP,', 'svr_5k2m9q7x4h-18081,0,0,0,1,,4,348,472,,0,,0,0,0,0,DOWN,'),
    );
    expect(summedTraffic(desired, [one])).toEqual({
      sessions_total: 8,
      bytes_in: 676,
      bytes_out: 944,
      current_sessions: 0,
      instances: 1,
      backends: [
        { server_id: 'svr_5k2m9q7x4h', port: 18081, up: true, sessions_total: 4, bytes_in: 348, bytes_out: 472, current_sessions: 0 },
        { server_id: 'svr_8w3n6p2r1t', port: 18082, up: true, sessions_total: 4, bytes_in: 328, bytes_out: 472, current_sessions: 0 },
        { server_id: 'svr_1a2b3c4d5e', port: 18083, up: false, ...ZERO },
        { server_id: 'svr_nowhere000', port: 80, up: false, ...ZERO },
      ],
    });
    const both = summedTraffic(desired, [one, other]);
    // The stats frontend's own session is not the load balancer's traffic.
    expect(both).toMatchObject({ sessions_total: 16, bytes_in: 1352, bytes_out: 1888, current_sessions: 0, instances: 2 });
    expect(both.backends.map(({ up, sessions_total, bytes_in }) => ({ up, sessions_total, bytes_in }))).toEqual([
      { up: false, sessions_total: 8, bytes_in: 696 }, // down on one process: not up
      { up: true, sessions_total: 8, bytes_in: 656 },
      { up: false, sessions_total: 0, bytes_in: 0 },
      { up: false, sessions_total: 0, bytes_in: 0 },
    ]);
    // No process: no traffic, nothing up.
    expect(summedTraffic(desired, [])).toEqual({
      ...ZERO,
      instances: 0,
      backends: desired.backends.map((b) => ({ server_id: b.server_id, port: b.port, up: false, ...ZERO })),
    });
  });
});
