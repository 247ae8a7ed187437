/** Free loopback ports for the processes a local driver starts. */
import net from 'node:net';

/**
 * `count` distinct free ports of 127.0.0.1, each asked of the kernel (port 0) and released
 * for a process to take. Another may take one in between; the process then fails to bind,
 * and the step is tried again.
 */
export async function freeLoopbackPorts(count: number): Promise<number[]> {
  const ports: number[] = [];
  while (ports.length < count) {
    const port = await new Promise<number>((resolve, reject) => {
      const server = net.createServer();
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => {
        const address = server.address();
        const port = typeof address === 'object' && address ? address.port : 0;
        server.close(() => {
          resolve(port);
        });
      });
    });
    if (!ports.includes(port)) ports.push(port);
  }
  return ports;
}
