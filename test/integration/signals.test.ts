/**
 * The service's answer to SIGTERM as an orchestrator sends it: at any moment after the
 * process started, a graceful stop that exits 0. A SIGTERM that came while the service was
 * still starting (a pod deleted right after it was scheduled, or a test stopping a service
 * the moment it answered) used to find no handler and end the process at once, without
 * stopping the service (seen in CI as an exit by signal).
 */
import { tempDataDir } from '../helpers/service';
import { MAIN } from '../helpers/child-service';
import { spawnTracked } from '../helpers/processes';

jest.setTimeout(60_000);

test('a SIGTERM while the service starts stops it once started, exit code 0, and the first key is still shown', async () => {
  const child = spawnTracked(process.execPath, [MAIN], {
    env: { PATH: process.env.PATH ?? '', CLOUDPLANE_PORT: '0', CLOUDPLANE_HOST: '127.0.0.1', CLOUDPLANE_DATA_DIR: tempDataDir(), CLOUDPLANE_LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  // Fastify's own "Server listening" comes from inside the start, before the service is ready.
  await new Promise<void>((resolve) => {
    const read = (chunk: Buffer) => {
      output += chunk.toString('utf8');
      if (output.includes('Server listening at')) resolve();
    };
    child.stdout!.on('data', read);
    child.stderr!.on('data', read);
  });
  child.kill('SIGTERM');
  expect(await exited).toEqual({ code: 0, signal: null });
  expect(output).toMatch(/"signal":"SIGTERM".*"msg":"shutting down"/);
  expect(output).toMatch(/Its API key, shown this once:\n {2}cpk_\w+/);
});
