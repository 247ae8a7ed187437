/**
 * The HAProxy renderer's output is the contract: these tests read the lines that carry
 * each decision, check that the same input gives the same bytes, and have the real
 * binary (`haproxy -c`) accept every combination of protocol, algorithm and stickiness.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { DesiredBackend, LoadBalancerDesired } from '../../src/drivers/load-balancer';
import { checkPath, renderHaproxyConfig, RenderOptions, serverName, STICKY_COOKIE } from '../../src/drivers/haproxy/render';
import { checkHaproxyConfig, makeTestCertificate } from '../helpers/haproxy';
import { desiredLoadBalancer } from '../helpers/load-balancer-desired';

function backend(server_id: string, port: number, address: string | null, draining = false): DesiredBackend {
  return { server_id, port, address, draining, drain_until: draining ? '2030-01-01T00:00:00.000Z' : null };
}

function desired(overrides: Partial<LoadBalancerDesired> = {}): LoadBalancerDesired {
  return desiredLoadBalancer({
    backends: [backend('svr_bbbbbbbbbbbbbbbbbbbb', 8080, '10.0.0.2'), backend('svr_aaaaaaaaaaaaaaaaaaaa', 8080, '10.0.0.1')],
    ...overrides,
  });
}

const options: RenderOptions = { stats: { port: 8404 }, certificateFile: '/etc/haproxy/tls/tls.pem' };

/** The indented lines of one section (`frontend public`, `backend servers`). */
function section(config: string, header: string): string[] {
  const blocks = config.split('\n\n').map((b) => b.replace(/^#.*\n/, ''));
  const block = blocks.find((b) => b.split('\n')[0] === header);
  if (!block) throw new Error(`no section '${header}' in:\n${config}`);
  return block
    .split('\n')
    .slice(1)
    .filter(Boolean)
    .map((line) => line.trim());
}

const serverLines = (config: string) => section(config, 'backend servers').filter((l) => l.startsWith('server '));

describe('HAProxy renderer', () => {
  it('renders the frontend on the spec port, round robin and an HTTP check, with servers sorted by name', () => {
    const config = renderHaproxyConfig(desired(), options);
    expect(section(config, 'frontend public')).toEqual([
      'bind *:80',
      'option forwardfor',
      'http-request set-header X-Forwarded-Proto http',
      'default_backend servers',
    ]);
    const backendLines = section(config, 'backend servers');
    expect(backendLines).toContain('balance roundrobin');
    expect(backendLines).toContain('option httpchk GET /health');
    expect(serverLines(config)).toEqual([
      'server svr_aaaaaaaaaaaaaaaaaaaa-8080 10.0.0.1:8080 check',
      'server svr_bbbbbbbbbbbbbbbbbbbb-8080 10.0.0.2:8080 check',
    ]);
    expect(section(config, 'defaults')).toContain('mode http');
  });

  it('is deterministic: the same spec, in any backend order, gives the same bytes', () => {
    const one = renderHaproxyConfig(desired(), options);
    const reversed = desired();
    reversed.backends.reverse();
    expect(renderHaproxyConfig(reversed, options)).toBe(one);
    expect(renderHaproxyConfig(desired(), options)).toBe(one);
    expect(one).not.toMatch(/\d{4}-\d{2}-\d{2}T/);
  });

  it('maps each algorithm to its balance, with consistent hashing for source', () => {
    const balance = (algorithm: string) => section(renderHaproxyConfig(desired({ algorithm }), options), 'backend servers');
    expect(balance('round_robin')).toContain('balance roundrobin');
    expect(balance('least_connections')).toContain('balance leastconn');
    expect(balance('ip_hash')).toEqual(expect.arrayContaining(['balance source', 'hash-type consistent']));
    expect(balance('round_robin')).not.toContain('hash-type consistent');
    expect(() => renderHaproxyConfig(desired({ algorithm: 'random' }), options)).toThrow(/algorithm 'random'/);
  });

  it('inserts a stickiness cookie on HTTP, with an opaque stable value per server', () => {
    const config = renderHaproxyConfig(desired({ sticky_sessions: true }), options);
    expect(section(config, 'backend servers')).toContain(`cookie ${STICKY_COOKIE} insert indirect nocache httponly`);
    const cookies = serverLines(config).map((l) => /cookie ([0-9a-f]{16})$/.exec(l)?.[1]);
    expect(cookies.every(Boolean)).toBe(true);
    expect(new Set(cookies).size).toBe(2);
    expect(config).not.toMatch(/cookie svr_/);
    expect(renderHaproxyConfig(desired({ sticky_sessions: true }), options)).toBe(config);
    expect(renderHaproxyConfig(desired(), options)).not.toContain('cookie ');
  });

  it('terminates TLS for https with the certificate file and marks the cookie secure', () => {
    const config = renderHaproxyConfig(desired({ protocol: 'https', port: 443, ssl_certificate_id: 'cert-web', sticky_sessions: true }), options);
    expect(section(config, 'frontend public')).toEqual(
      expect.arrayContaining(['bind *:443 ssl crt "/etc/haproxy/tls/tls.pem" alpn h2,http/1.1', 'http-request set-header X-Forwarded-Proto https']),
    );
    expect(section(config, 'global')).toContain('ssl-default-bind-options ssl-min-ver TLSv1.2 no-tls-tickets');
    expect(section(config, 'backend servers')).toContain(`cookie ${STICKY_COOKIE} insert indirect nocache httponly secure`);
    // Backends are spoken to in plain HTTP: TLS ends at the load balancer.
    expect(serverLines(config).every((l) => !l.includes('ssl'))).toBe(true);
    expect(() => renderHaproxyConfig(desired({ protocol: 'https', port: 443 }), { stats: { port: 8404 } })).toThrow(/certificate file/);
  });

  it('runs tcp in TCP mode with connect checks, and sticks clients by address when asked', () => {
    const config = renderHaproxyConfig(desired({ protocol: 'tcp', port: 5432, sticky_sessions: true }), options);
    expect(section(config, 'defaults')).toContain('mode tcp');
    expect(section(config, 'frontend public')).toEqual(['bind *:5432', 'default_backend servers']);
    const backendLines = section(config, 'backend servers');
    expect(backendLines.some((l) => l.includes('httpchk'))).toBe(false);
    expect(backendLines).toEqual(expect.arrayContaining(['stick-table type ip size 1m expire 30m', 'stick on src']));
    expect(backendLines.some((l) => l.startsWith('cookie'))).toBe(false);
    expect(section(config, 'defaults').some((l) => l.includes('http-request'))).toBe(false);
  });

  it('keeps a draining backend at weight 0 and leaves out one without a usable address', () => {
    const config = renderHaproxyConfig(
      desired({
        backends: [
          backend('svr_aaaaaaaaaaaaaaaaaaaa', 8080, '10.0.0.1'),
          backend('svr_cccccccccccccccccccc', 8080, '10.0.0.3', true),
          backend('svr_dddddddddddddddddddd', 8080, null),
          backend('svr_eeeeeeeeeeeeeeeeeeee', 8080, '10.0.0.5 backup'),
        ],
      }),
      options,
    );
    expect(serverLines(config)).toEqual([
      'server svr_aaaaaaaaaaaaaaaaaaaa-8080 10.0.0.1:8080 check',
      'server svr_cccccccccccccccccccc-8080 10.0.0.3:8080 check weight 0',
    ]);
  });

  it('renders one server per server and port, an attached one winning over its draining twin', () => {
    const config = renderHaproxyConfig(
      desired({
        backends: [
          backend('svr_aaaaaaaaaaaaaaaaaaaa', 8080, '10.0.0.1', true),
          backend('svr_aaaaaaaaaaaaaaaaaaaa', 8080, '10.0.0.1'),
          backend('svr_aaaaaaaaaaaaaaaaaaaa', 9090, '10.0.0.1', true),
        ],
      }),
      options,
    );
    expect(serverLines(config)).toEqual([
      'server svr_aaaaaaaaaaaaaaaaaaaa-8080 10.0.0.1:8080 check',
      'server svr_aaaaaaaaaaaaaaaaaaaa-9090 10.0.0.1:9090 check weight 0',
    ]);
    expect(serverName({ server_id: 'svr_aaaaaaaaaaaaaaaaaaaa', port: 9090 })).toBe('svr_aaaaaaaaaaaaaaaaaaaa-9090');
  });

  it('renders IPv6 backends and listen addresses the way HAProxy parses them', () => {
    const config = renderHaproxyConfig(desired({ backends: [backend('svr_aaaaaaaaaaaaaaaaaaaa', 8080, 'fd00::1')] }), {
      ...options,
      listen: { address: '::1', port: 18080 },
      stats: { address: '127.0.0.1', port: 18404 },
    });
    expect(serverLines(config)).toEqual(['server svr_aaaaaaaaaaaaaaaaaaaa-8080 ipv6@fd00::1:8080 check']);
    expect(section(config, 'frontend public')[0]).toBe('bind ipv6@::1:18080');
    expect(section(config, 'frontend stats')).toEqual(
      expect.arrayContaining(['bind 127.0.0.1:18404', 'stats enable', 'stats uri /stats', 'monitor-uri /healthz', 'no log']),
    );
  });

  it('renders the timeouts, the check interval and the runtime socket it is given', () => {
    const config = renderHaproxyConfig(desired(), {
      ...options,
      runtimeSocket: '/run/haproxy/admin.sock',
      checkIntervalMs: 250,
      timeouts: { connectMs: 1500, serverMs: 120_000, hardStopAfterMs: 60_000 },
    });
    expect(section(config, 'defaults')).toEqual(
      expect.arrayContaining([
        'timeout connect 1500ms',
        'timeout client 30s',
        'timeout server 120s',
        'timeout http-request 10s',
        'timeout check 2s',
        'default-server inter 250ms fall 2 rise 2',
      ]),
    );
    expect(section(config, 'global')).toEqual(
      expect.arrayContaining(['hard-stop-after 60s', 'stats socket "/run/haproxy/admin.sock" mode 600 level admin expose-fd listeners']),
    );
    expect(renderHaproxyConfig(desired(), options)).not.toContain('stats socket');
  });

  it('percent-encodes what in a check path could break out of its argument', () => {
    expect(checkPath('/health')).toBe('/health');
    expect(checkPath('/a b#c$d"e\\f\ng')).toBe('/a%20b%23c%24d%22e%5Cf%0Ag');
    expect(checkPath('/ok?x=1&y=%41')).toBe('/ok?x=1&y=%41');
    expect(checkPath('/100%')).toBe('/100%25');
    expect(checkPath('/é')).toBe('/%C3%A9');
    const config = renderHaproxyConfig(desired({ health_check_path: '/x\n    stats socket /tmp/evil level admin' }), options);
    expect(section(config, 'backend servers')).toContain('option httpchk GET /x%0A%20%20%20%20stats%20socket%20/tmp/evil%20level%20admin');
    expect(config).not.toContain('/tmp/evil level');
  });

  describe('accepted by haproxy -c, without warnings', () => {
    const cases: Array<[string, Partial<LoadBalancerDesired>]> = [];
    for (const protocol of ['http', 'https', 'tcp']) {
      for (const algorithm of ['round_robin', 'least_connections', 'ip_hash']) {
        for (const sticky_sessions of [false, true]) {
          const port = protocol === 'https' ? 443 : protocol === 'tcp' ? 5432 : 80;
          cases.push([
            `${protocol} ${algorithm}${sticky_sessions ? ' sticky' : ''}`,
            { protocol, algorithm, sticky_sessions, port, ssl_certificate_id: protocol === 'https' ? 'c' : null },
          ]);
        }
      }
    }
    cases.push(['no backends', { backends: [] }]);
    cases.push([
      'draining, addressless and IPv6 backends with a hostile check path',
      {
        health_check_path: '/h "x" #y $HOME',
        backends: [
          backend('svr_aaaaaaaaaaaaaaaaaaaa', 8080, '10.0.0.1', true),
          backend('svr_bbbbbbbbbbbbbbbbbbbb', 8080, null),
          backend('svr_cccccccccccccccccccc', 1, 'fd00::2'),
        ],
      },
    ]);

    it('refuses what HAProxy refuses (the check can fail)', async () => {
      const broken = renderHaproxyConfig(desired(), options).replace('balance roundrobin', 'balance sideways');
      expect((await checkHaproxyConfig(broken)).valid).toBe(false);
    });

    it.each(cases)('%s', async (_name, overrides) => {
      // `haproxy -c` loads the certificate: a real one is made where https needs it.
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-render-'));
      try {
        const spec = desired(overrides);
        const certificateFile = spec.protocol === 'https' ? (await makeTestCertificate(dir)).certificateFile : null;
        const config = renderHaproxyConfig(spec, { stats: { port: 8404 }, certificateFile, runtimeSocket: path.join(dir, 'admin.sock') });
        const result = await checkHaproxyConfig(config);
        expect({ valid: result.valid, warnings: result.output.split('\n').filter((l) => /WARNING|ALERT/.test(l)) }).toEqual({ valid: true, warnings: [] });
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });
  });
});
