/**
 * `make run` as a newcomer meets it: a restart with nothing changed builds nothing, and the
 * real service's terminal at the default levels holds the banner and warnings, not a line
 * per request.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { startChildService, ChildService } from '../helpers/child-service';
import { tempDataDir } from '../helpers/service';

jest.setTimeout(120_000);

const exec = promisify(execFile);
const ROOT = path.resolve(__dirname, '../..');
const KEY = 'cpk_FirstRunTest0123456789abcdefghijABCDEFG';

describe('the first run', () => {
  let svc: ChildService | null = null;
  afterAll(async () => {
    await svc?.kill();
  });

  it('builds nothing again when nothing changed (make test built it before the tests)', async () => {
    // Run as make test's own child too (MAKELEVEL set), where make says which directory it enters.
    const { stdout } = await exec('make', ['--no-print-directory', '-n', 'build'], { cwd: ROOT });
    expect(stdout.trim()).toMatch(/^make(\[\d+\])?: Nothing to be done for 'build'\.$/);
  });

  it('shows the banner and no request lines at the default levels', async () => {
    svc = await startChildService({ dataDir: tempDataDir(), key: KEY, env: { CLOUDPLANE_LOG_LEVEL: 'info', CLOUDPLANE_PROVIDER: 'simulated' } });
    for (let i = 0; i < 5; i++) expect((await svc.api('GET', '/api/v1/regions')).status).toBe(200);
    expect((await svc.api('GET', '/api/v1/load-balancers/lb_none')).status).toBe(404);
    const output = svc.output();
    expect(output).toContain('Cloudplane is listening on');
    expect(output).not.toMatch(/request completed|incoming request/);
  });
});
