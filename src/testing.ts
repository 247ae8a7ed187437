/**
 * A local cloud for a client's own tests (docs/testing.md): a fresh embedded service in a
 * directory of its own, on a free loopback port, with the simulated drivers and the
 * simulation API on, so a test suite can make what it tests against fail or wait on
 * purpose. `stop()` ends the service and removes its directory. The same code as
 * `make run`; nothing about it is a stand-in.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadConfig } from './config';
import { createLogger } from './logger';
import { startService } from './service';

export interface LocalCloudOptions {
  /** Settings of the service (README, Configuration), over the local cloud's defaults. */
  env?: Record<string, string>;
  /** Where its data directory is made; the system's temporary directory by default. */
  parentDir?: string;
}

export interface LocalCloud {
  /** The service's address, e.g. http://127.0.0.1:41235 (the API under /api/v1). */
  url: string;
  /** The API key of the team made at its first start (an owner's read_write key). */
  apiKey: string;
  teamId: string;
  dataDir: string;
  /** Stops the service and removes its data directory. */
  stop(): Promise<void>;
}

/** What a local cloud starts with: quick simulated operations, faults on, quiet logs. */
export const LOCAL_CLOUD_DEFAULTS: Readonly<Record<string, string>> = {
  CLOUDPLANE_HOST: '127.0.0.1',
  CLOUDPLANE_PORT: '0',
  CLOUDPLANE_PROVIDER: 'simulated',
  CLOUDPLANE_SIMULATION_API: 'true',
  CLOUDPLANE_SIM_DELAY_MS: '200',
  CLOUDPLANE_LOG_LEVEL: 'warn',
};

export async function startLocalCloud(options: LocalCloudOptions = {}): Promise<LocalCloud> {
  const dataDir = await mkdtemp(path.join(options.parentDir ?? tmpdir(), 'cloudplane-'));
  try {
    const config = loadConfig({ ...LOCAL_CLOUD_DEFAULTS, ...options.env, CLOUDPLANE_DATA_DIR: dataDir });
    const service = await startService(config, createLogger(config.logLevel));
    const bootstrap = service.bootstrap;
    if (!bootstrap) {
      await service.stop();
      throw new Error('the local cloud made no team at its first start');
    }
    return {
      url: service.url,
      apiKey: bootstrap.token,
      teamId: bootstrap.teamId,
      dataDir,
      stop: async () => {
        await service.stop();
        await rm(dataDir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    await rm(dataDir, { recursive: true, force: true });
    throw err;
  }
}
