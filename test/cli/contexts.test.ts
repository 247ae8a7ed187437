/**
 * The CLI's contexts and the ways a command can fail before or outside the API's answer:
 * auth init/list/switch/remove, the config file and its mode, environment overrides,
 * refused keys, unreachable and silent endpoints, usage errors, and completion scripts.
 * Every command runs the built CLI as a child process against the real service.
 */
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { execFileSync, spawn } from 'node:child_process';
import YAML from 'yaml';
import { startTestService, TestService, eventually } from '../helpers/service';
import { startReceiver } from '../helpers/receiver';
import { cli, cliInTerminal, freshConfigPath, hasStackTrace } from './run-cli';

// Low enough for a test to use a key's whole minute up; the file's other commands stay far below it.
const RATE_LIMIT = 100;

let t: TestService;
beforeAll(async () => {
  t = await startTestService({ CLOUDPLANE_RATE_LIMIT_PER_MINUTE: String(RATE_LIMIT) });
});
afterAll(async () => t.stop());

/** A loopback port nothing listens on (it was free a moment ago). */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const modeOf = (file: string) => fs.statSync(file).mode & 0o777;

describe('contexts', () => {
  it('auth init checks the key, saves it 0600 without printing it, and later commands use it', async () => {
    const config = freshConfigPath();
    const env = { CLOUDPLANE_CONFIG: config };
    const init = await cli(['auth', 'init', '--api-url', `${t.url}/api/v1/`, '--api-key', t.key], { env });
    expect(init.code).toBe(0);
    expect(init.stdout + init.stderr).not.toContain(t.key);
    expect(init.stderr).toContain('owner@example.com');
    expect(modeOf(config)).toBe(0o600);
    expect(modeOf(path.dirname(config))).toBe(0o700);
    // The /api/v1 suffix is dropped: the context holds the service's address.
    expect(YAML.parse(fs.readFileSync(config, 'utf8'))).toEqual({ current_context: 'default', contexts: { default: { api_url: t.url, api_key: t.key } } });

    const profile = await cli(['settings', 'profile', 'get', '-o', 'json'], { env });
    expect(profile.code).toBe(0);
    expect(JSON.parse(profile.stdout)).toMatchObject({ email: 'owner@example.com', team_id: t.teamId });

    for (const output of ['table', 'json', 'yaml']) {
      const list = await cli(['auth', 'list', '-o', output], { env });
      expect(list.code).toBe(0);
      expect(list.stdout).not.toContain(t.key);
      expect(list.stdout).toContain(t.url);
    }
    expect(JSON.parse((await cli(['auth', 'list', '-o', 'json'], { env })).stdout)).toEqual([{ name: 'default', api_url: t.url, current: true }]);
  });

  it('auth init refuses a bad key and saves nothing', async () => {
    const config = freshConfigPath();
    const init = await cli(['auth', 'init', '--api-url', t.url, '--api-key', 'cpk_not_a_real_key_00000000000000000000'], {
      env: { CLOUDPLANE_CONFIG: config },
    });
    expect(init.code).toBe(4);
    expect(init.stderr).toMatch(/^Error: unauthorized: the API at .* refused the key, nothing saved/);
    expect(fs.existsSync(config)).toBe(false);
  });

  it('asks for endpoint and key on stdin, keeps several contexts, switches, picks one per command, removes one', async () => {
    const config = freshConfigPath();
    const env = { CLOUDPLANE_CONFIG: config };
    const second = (await t.api('POST', '/api/v1/settings/api-keys', { name: 'cli-second', scope: 'read_only' })).body.data.key as string;
    expect((await cli(['auth', 'init', '--api-url', t.url, '--api-key', t.key], { env })).code).toBe(0);
    const asked = await cli(['auth', 'init', '--context', 'reader'], { env, input: `${t.url}\n${second}\n` });
    expect(asked.code).toBe(0);
    expect(asked.stderr).toContain('API endpoint');
    expect(asked.stderr + asked.stdout).not.toContain(second);
    expect(JSON.parse((await cli(['auth', 'list', '-o', 'json'], { env })).stdout)).toEqual([
      { name: 'default', api_url: t.url, current: false },
      { name: 'reader', api_url: t.url, current: true },
    ]);

    // The read-only context cannot write; --context picks the other for one command.
    const refused = await cli(['object-storage', 'create', '--name', 'ctx-bucket', '--region', 'fra1'], { env });
    expect(refused.code).toBe(4);
    expect(refused.stderr).toMatch(/^Error: forbidden: /);
    const created = await cli(['object-storage', 'create', '--name', 'ctx-bucket', '--region', 'fra1', '--context', 'default', '-o', 'json'], { env });
    expect(created.code).toBe(0);
    expect(JSON.parse(created.stdout)).toMatchObject({ name: 'ctx-bucket', status: 'creating' });

    // A file someone loosened is written back 0600.
    fs.chmodSync(config, 0o644);
    expect((await cli(['auth', 'switch', 'default'], { env })).code).toBe(0);
    expect(modeOf(config)).toBe(0o600);
    expect(JSON.parse((await cli(['auth', 'list', '-o', 'json'], { env })).stdout).find((c: any) => c.current).name).toBe('default');

    expect((await cli(['auth', 'remove', 'reader'], { env })).code).toBe(0);
    expect(JSON.parse((await cli(['auth', 'list', '-o', 'json'], { env })).stdout).map((c: any) => c.name)).toEqual(['default']);
    const gone = await cli(['regions', 'list', '--context', 'reader'], { env });
    expect(gone.code).toBe(2);
    expect(gone.stderr).toContain('no context named reader');
    expect((await cli(['auth', 'switch', 'reader'], { env })).code).toBe(2);
  });

  it('on a terminal, asks for the key without echoing it', async () => {
    const config = freshConfigPath();
    const run = await cliInTerminal(['auth', 'init', '--context', 'typed'], { CLOUDPLANE_CONFIG: config }, [
      { after: /API endpoint .*: $/, line: t.url },
      { after: /API key .*: $/, line: t.key },
    ]);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(t.url);
    expect(run.stdout).toContain('Saved context typed');
    expect(run.stdout).not.toContain(t.key);
    expect(run.stdout).not.toContain(t.key.slice(4, 12));
    expect(YAML.parse(fs.readFileSync(config, 'utf8')).contexts.typed).toEqual({ api_url: t.url, api_key: t.key });
  });

  it('CLOUDPLANE_API_URL and CLOUDPLANE_API_KEY override the file', async () => {
    const config = freshConfigPath();
    expect((await cli(['auth', 'init', '--api-url', t.url, '--api-key', t.key], { env: { CLOUDPLANE_CONFIG: config } })).code).toBe(0);
    const badKey = await cli(['regions', 'list'], { env: { CLOUDPLANE_CONFIG: config, CLOUDPLANE_API_KEY: 'cpk_revoked_or_never_issued_000000000000' } });
    expect(badKey.code).toBe(4);
    expect(badKey.stderr).toMatch(/^Error: unauthorized: /);
    const closed = await closedPort();
    const elsewhere = await cli(['regions', 'list'], { env: { CLOUDPLANE_CONFIG: config, CLOUDPLANE_API_URL: `http://127.0.0.1:${closed}` } });
    expect(elsewhere.code).toBe(5);
    expect(elsewhere.stderr).toContain(`cannot reach http://127.0.0.1:${closed}`);
    // The environment alone is enough, without any file.
    const envOnly = await cli(['regions', 'list', '-o', 'json'], {
      env: { CLOUDPLANE_CONFIG: freshConfigPath(), CLOUDPLANE_API_URL: t.url, CLOUDPLANE_API_KEY: t.key },
    });
    expect(envOnly.code).toBe(0);
    expect(JSON.parse(envOnly.stdout).map((r: any) => r.id)).toContain('fra1');
  });

  it('finds the file under XDG_CONFIG_HOME, else ~/.config', async () => {
    const xdg = fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-xdg-'));
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-home-'));
    expect((await cli(['auth', 'init', '--api-url', t.url, '--api-key', t.key], { env: { XDG_CONFIG_HOME: xdg, HOME: home } })).code).toBe(0);
    expect(fs.existsSync(path.join(xdg, 'cloudplane', 'config.yaml'))).toBe(true);
    expect((await cli(['auth', 'init', '--api-url', t.url, '--api-key', t.key], { env: { XDG_CONFIG_HOME: '', HOME: home } })).code).toBe(0);
    expect(fs.existsSync(path.join(home, '.config', 'cloudplane', 'config.yaml'))).toBe(true);
  });
});

describe('failures outside the API', () => {
  it('without credentials: exit 4 and how to get some', async () => {
    const run = await cli(['load-balancers', 'list'], { env: { CLOUDPLANE_CONFIG: freshConfigPath() } });
    expect(run.code).toBe(4);
    expect(run.stderr).toContain('cloudplane auth init');
  });

  it('an unreachable endpoint and one that never answers: exit 5, a sentence, no stack trace', async () => {
    const closed = await closedPort();
    const unreachable = await cli(['servers', 'list'], {
      env: { CLOUDPLANE_CONFIG: freshConfigPath(), CLOUDPLANE_API_URL: `http://127.0.0.1:${closed}`, CLOUDPLANE_API_KEY: t.key },
    });
    expect(unreachable.code).toBe(5);
    expect(unreachable.stderr).toBe(`Error: unreachable: cannot reach http://127.0.0.1:${closed}: ECONNREFUSED\n`);

    const silent = net.createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(silent.address() as net.AddressInfo).port}`;
      const run = await cli(['servers', 'list', '--timeout', '0.5'], {
        env: { CLOUDPLANE_CONFIG: freshConfigPath(), CLOUDPLANE_API_URL: url, CLOUDPLANE_API_KEY: t.key },
      });
      expect(run.code).toBe(5);
      expect(run.stderr).toBe(`Error: timeout: no answer from ${url} within 0.5 s (--timeout)\n`);
      expect(hasStackTrace(run.stderr)).toBe(false);
    } finally {
      silent.close();
    }
  });

  it('an endpoint that is not the API: exit 5, and auth init saves nothing', async () => {
    const other = await startReceiver();
    try {
      const origin = new URL(other.url).origin;
      const config = freshConfigPath();
      const run = await cli(['auth', 'init', '--api-url', origin, '--api-key', t.key], { env: { CLOUDPLANE_CONFIG: config } });
      expect(run.code).toBe(5);
      expect(run.stderr).toBe(`Error: not_an_api: ${origin} answered 200 with something other than JSON; is it a Cloudplane API?\n`);
      expect(fs.existsSync(config)).toBe(false);
    } finally {
      await other.close();
    }
  });

  it('a rate-limited key: exit 5 and when to retry', async () => {
    const key = (await t.api('POST', '/api/v1/settings/api-keys', { name: 'hasty' })).body.data.key as string;
    const env = { CLOUDPLANE_CONFIG: freshConfigPath(), CLOUDPLANE_API_URL: t.url, CLOUDPLANE_API_KEY: key };
    // The window may turn between using it up and the command; then use it up again.
    const limited = await eventually(async () => {
      let status = 0;
      while (status !== 429) status = (await t.api('GET', '/api/v1/regions', undefined, { key })).status;
      const run = await cli(['regions', 'list'], { env });
      return run.code === 5 ? run : null;
    }, 30_000);
    expect(limited.stderr).toMatch(/^Error: rate_limit_exceeded: .*\(retry after \d+ s\)\n$/);
  });

  it('a reader that closes the pipe early ends the command quietly', async () => {
    const child = spawn(process.execPath, [path.resolve(__dirname, '../../dist/src/main.js'), 'completion', 'bash'], { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.destroy();
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const code = await new Promise((resolve) => child.on('close', resolve));
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
  });

  it('usage errors exit 2', async () => {
    const env = { CLOUDPLANE_CONFIG: freshConfigPath(), CLOUDPLANE_API_URL: t.url, CLOUDPLANE_API_KEY: t.key };
    for (const args of [
      ['no-such-group'],
      ['load-balancers', 'frobnicate'],
      ['load-balancers', 'get'],
      ['regions', 'list', '-o', 'xml'],
      ['load-balancers', 'create', '--port', 'eighty'],
      ['load-balancers', 'create', '-f', '/nonexistent/body.json'],
      ['completion', 'powershell'],
      // Settled within the request: nothing to wait for.
      ['webhooks', 'update', 'wh_doesnotexist000000', '--active', 'false', '--wait'],
    ]) {
      const run = await cli(args, { env });
      expect({ args, code: run.code }).toEqual({ args, code: 2 });
      expect(run.stderr).not.toBe('');
      expect(hasStackTrace(run.stderr)).toBe(false);
    }
    const help = await cli(['--help'], { env });
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Exit codes:');
  });

  it('--version prints the package version, needing no credentials', async () => {
    const { version } = JSON.parse(fs.readFileSync(path.resolve(__dirname, '../../package.json'), 'utf8')) as { version: string };
    for (const flag of ['--version', '-V'])
      expect(await cli([flag], { env: { CLOUDPLANE_CONFIG: freshConfigPath() } })).toEqual({ code: 0, stdout: `${version}\n`, stderr: '' });
  });
});

describe('completion', () => {
  const bashCompletes = (script: string, words: string[]) => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-completion-')), 'c.bash');
    fs.writeFileSync(file, script);
    const array = words.map((w) => `'${w}'`).join(' ');
    const out = execFileSync(
      'bash',
      ['-c', `source '${file}'; COMP_WORDS=(${array}); COMP_CWORD=${words.length - 1}; _cloudplane; printf '%s\\n' "\${COMPREPLY[@]}"`],
      { encoding: 'utf8' },
    );
    return out.split('\n').filter(Boolean);
  };

  it('bash: valid, and completes commands, flags and choices from the tree', async () => {
    const run = await cli(['completion', 'bash']);
    expect(run.code).toBe(0);
    execFileSync('bash', ['-n'], { input: run.stdout });
    expect(bashCompletes(run.stdout, ['cloudplane', ''])).toEqual(expect.arrayContaining(['auth', 'load-balancers', 'webhooks', 'serve', 'completion']));
    expect(bashCompletes(run.stdout, ['cloudplane', 'load-balancers', ''])).toEqual(
      expect.arrayContaining(['list', 'get', 'create', 'update', 'delete', 'attach', 'detach']),
    );
    expect(bashCompletes(run.stdout, ['cloudplane', 'webhooks', 'deliveries', ''])).toEqual(['list', 'get', 'retry']);
    expect(bashCompletes(run.stdout, ['cloudplane', 'servers', 'create', '--'])).toEqual(
      expect.arrayContaining(['--name', '--region', '--wait', '--output', '--context']),
    );
    expect(bashCompletes(run.stdout, ['cloudplane', 'servers', 'list', '-o', ''])).toEqual(['table', 'json', 'yaml']);
    expect(bashCompletes(run.stdout, ['cloudplane', 'webhooks', 'deliveries', 'list', '--status', 'f'])).toEqual(['failed']);
    // After a flag that takes free text, nothing is offered (not the subcommands).
    expect(bashCompletes(run.stdout, ['cloudplane', 'servers', 'create', '--name', ''])).toEqual([]);
    expect(bashCompletes(run.stdout, ['cloudplane', 'servers', 'create', '--name', 'web', '--'])).toEqual(expect.arrayContaining(['--region']));
  });

  it('zsh and fish: valid, and complete from the same tree (Debian zsh and fish, installed by scripts/ensure-tools.sh)', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-completion-'));
    const zsh = await cli(['completion', 'zsh']);
    expect(zsh.code).toBe(0);
    expect(zsh.stdout).toMatch(/^#compdef cloudplane/);
    fs.writeFileSync(path.join(dir, 'c.zsh'), zsh.stdout);
    execFileSync('zsh', ['-n', path.join(dir, 'c.zsh')]);
    // Outside a completion widget: compadd prints what it is given, and words/CURRENT are set by hand.
    const zshCompletes = (words: string[]) =>
      execFileSync(
        'zsh',
        [
          '-f',
          '-c',
          `compdef() { : }; compadd() { shift; print -l -- "$@" }; source '${dir}/c.zsh'; words=(${words.map((w) => `'${w}'`).join(' ')}); CURRENT=${words.length}; _cloudplane`,
        ],
        { encoding: 'utf8' },
      )
        .split('\n')
        .filter(Boolean);
    expect(zshCompletes(['cloudplane', 'webhooks', 'deliveries', ''])).toEqual(['list', 'get', 'retry']);
    expect(zshCompletes(['cloudplane', 'servers', 'list', '-o', ''])).toEqual(['table', 'json', 'yaml']);
    expect(zshCompletes(['cloudplane', 'servers', 'create', '--'])).toEqual(expect.arrayContaining(['--name', '--wait', '--context']));

    const fish = await cli(['completion', 'fish']);
    expect(fish.code).toBe(0);
    fs.writeFileSync(path.join(dir, 'c.fish'), fish.stdout);
    execFileSync('fish', ['-n', path.join(dir, 'c.fish')]);
    const fishCompletes = (line: string) =>
      execFileSync('fish', ['-c', `source '${dir}/c.fish'; complete -C '${line}'`], { encoding: 'utf8' })
        .split('\n')
        .filter(Boolean)
        .map((l) => l.split('\t')[0]);
    expect(fishCompletes('cloudplane servers ')).toEqual(expect.arrayContaining(['list', 'stop', 'start', 'reboot']));
    expect(fishCompletes('cloudplane servers list -o ')).toEqual(['json', 'table', 'yaml']);
    expect(fishCompletes('cloudplane webhooks deliveries list --status ')).toEqual(['failed', 'pending', 'succeeded']);
    expect(fishCompletes('cloudplane servers create --name ')).toEqual([]);
  });
});
