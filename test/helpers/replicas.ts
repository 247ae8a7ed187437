/**
 * Replicas of one install as the chart runs them beyond one: operator processes (child
 * services) on one real kube-apiserver with the CRDs and one nats-server, each with its
 * own data directory and Pod name.
 */
import { startChildService, ChildService } from './child-service';
import { installCrds, storeEnvFor } from './cluster';
import { startKubeApiServer } from './kube-apiserver';
import { startNatsServer } from './nats-server';
import { tempDataDir } from './service';

export interface Install {
  replicas: ChildService[];
  stop(): Promise<void>;
}

/** Starts `count` replicas accepting `key`, with `env` on top of the store and NATS settings. */
export async function startReplicas(key: string, env: Record<string, string>, count = 2): Promise<Install> {
  const [server, nats] = await Promise.all([startKubeApiServer(), startNatsServer()]);
  const replicas: ChildService[] = [];
  const stop = async () => {
    await Promise.all(replicas.map((r) => r.stop().catch(() => undefined)));
    await Promise.all([server.stop(), nats.stop()]);
  };
  try {
    await installCrds(server);
    const names = Array.from({ length: count }, (_, i) => String.fromCharCode(97 + i));
    const started = await Promise.all(
      names.map((name) =>
        startChildService({
          dataDir: tempDataDir(),
          key,
          startTimeoutMs: 60_000,
          env: { ...storeEnvFor(server), CLOUDPLANE_NATS_URL: nats.url, POD_NAME: `replica-${name}`, ...env },
        }),
      ),
    );
    replicas.push(...started);
  } catch (err) {
    await stop();
    throw err;
  }
  return { replicas, stop };
}
