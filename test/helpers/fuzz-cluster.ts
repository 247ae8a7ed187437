/**
 * A real etcd + kube-apiserver with the CRDs installed, for `FUZZ_STORE=kubernetes
 * scripts/fuzz-api.sh` (run as `node dist/test/helpers/fuzz-cluster.js`). It starts the
 * cluster the way the API suites do (cluster.ts clusterEnv), prints the service's settings
 * as KEY=VALUE lines followed by `ready`, and stops everything on SIGTERM or SIGINT.
 */
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { clusterEnv, stopClusters } from './cluster';
import { packageRoot } from '../../src/lib/package-root';

// Compiled into dist/test/helpers: the repo is three levels up, where kube-apiserver.ts's
// own lookup (two levels, for the sources jest runs) would miss build-kube-component.sh.
const REPO = packageRoot(__dirname);

async function main(): Promise<void> {
  process.env.KUBE_APISERVER_BIN ??= execFileSync(path.join(REPO, 'scripts/build-kube-component.sh'), ['kube-apiserver'], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  }).trim();
  let stopping: Promise<void> | undefined;
  const stop = () => (stopping ??= stopClusters().finally(() => process.exit(0)));
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);

  // clusterEnv keys its clusters by a data directory name; there is only this one here.
  const env = await clusterEnv('fuzz');
  for (const [name, value] of Object.entries(env)) process.stdout.write(`${name}=${value}\n`);
  process.stdout.write('ready\n');
  setInterval(() => {}, 1 << 30); // keep running until signalled
}

main().catch(async (err) => {
  process.stderr.write(`fuzz-cluster: ${err instanceof Error ? err.stack : String(err)}\n`);
  await stopClusters().catch(() => {});
  process.exit(1);
});
