/**
 * Reading HAProxy's stats: the status words it uses map onto up, drain, down and
 * maintenance as HAProxy routes them, fields it quotes are read whole, and a desired
 * backend HAProxy does not list is not up. The data-plane test reads the same code from a
 * running HAProxy; these cover the words a test cannot easily provoke.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { LoadBalancerDesired } from '../../src/drivers/load-balancer';
import { backendHealth, httpStatsSource, parseServerStats, readServerStats, serverState, StatsSource } from '../../src/drivers/haproxy/state';

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
      { proxy: 'servers', server: 'svr_a-80', status: 'UP', state: 'up', weight: 1, checkStatus: 'L7OK' },
      { proxy: 'servers', server: 'svr_b-80', status: 'DOWN', state: 'down', weight: 1, checkStatus: 'L7STS' },
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
});
