/** A port that cannot be had stops the start with the setting that chooses another, and leaves nothing running. */
import net from 'node:net';
import { startTestService, tempDataDir } from '../helpers/service';

const KEY = { CLOUDPLANE_BOOTSTRAP_API_KEY: 'cpk_ListenProblems0123456789abcdefghijABCD' };

describe('a port that cannot be had', () => {
  it('names CLOUDPLANE_PORT when the port is in use', async () => {
    const holder = net.createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const address = holder.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    const dataDir = tempDataDir();
    try {
      await expect(startTestService({ ...KEY, CLOUDPLANE_PORT: String(port) }, dataDir)).rejects.toThrow(
        new RegExp(`127\\.0\\.0\\.1:${port} is already in use .*set CLOUDPLANE_PORT to a free port`),
      );
      // What had started was stopped: the same data directory's service starts on another port.
      const next = await startTestService(KEY, dataDir);
      expect((await next.api('GET', '/api/v1/regions')).status).toBe(200);
      await next.stop();
    } finally {
      holder.close();
    }
  });

  it('names CLOUDPLANE_HOST when the address is none of this machine', async () => {
    await expect(startTestService({ CLOUDPLANE_HOST: '192.0.2.1' })).rejects.toThrow(/192\.0\.2\.1 is no address of this machine: set CLOUDPLANE_HOST/);
  });
});
