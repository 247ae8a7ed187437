/**
 * The offline `team create` command stays for the embedded store: the team it adds to a
 * stopped service's data directory works once the service runs again. In cluster mode it
 * refuses, pointing at POST /api/v1/teams, rather than write a data directory no one reads.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { startTestService, tempDataDir } from '../helpers/service';

const MAIN = path.resolve(__dirname, '../../dist/src/main.js');
const run = promisify(execFile);

const teamCreate = (env: Record<string, string>) =>
  run(process.execPath, [MAIN, 'team', 'create', 'Offline team', 'offline@example.org'], { env: { ...process.env, CLOUDPLANE_LOG_LEVEL: 'silent', ...env } });

describe('cloudplane team create', () => {
  it('adds a team to a stopped embedded service, whose key then works', async () => {
    const dataDir = tempDataDir();
    const first = await startTestService({}, dataDir);
    const adminKey = first.key;
    await first.stop();

    const { stdout } = await teamCreate({ CLOUDPLANE_STORE: 'embedded', CLOUDPLANE_DATA_DIR: dataDir });
    const token = /(cpk_[0-9A-Za-z]{32,})/.exec(stdout)?.[1];
    expect(token).toBeDefined();

    const again = await startTestService({ CLOUDPLANE_BOOTSTRAP_API_KEY: adminKey }, dataDir);
    try {
      const team = await again.api('GET', '/api/v1/settings/team', undefined, { key: token });
      expect(team.status).toBe(200);
      expect(team.body.data.name).toBe('Offline team');
      const owner = await again.api('GET', '/api/v1/settings/profile', undefined, { key: token });
      expect(owner.body.data).toMatchObject({ email: 'offline@example.org', role: 'owner' });
      const teams = await again.api('GET', '/api/v1/teams');
      expect(teams.body.data.map((x: { name: string }) => x.name).sort()).toEqual(['My team', 'Offline team']);
    } finally {
      await again.stop();
    }
  });

  it('refuses in cluster mode and names the API to use', async () => {
    const refused = teamCreate({ CLOUDPLANE_STORE: 'kubernetes', CLOUDPLANE_DATA_DIR: tempDataDir() });
    await expect(refused).rejects.toMatchObject({ code: 1, stderr: expect.stringContaining('POST /api/v1/teams') });
  });
});
