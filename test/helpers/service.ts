/**
 * Starts the real service (embedded store, simulated provider, real HTTP listener on a
 * free loopback port) in a fresh data directory, and gives tests a small HTTP client.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../src/config';
import { createLogger } from '../../src/logger';
import { startService, RunningService } from '../../src/service';
import { clusterEnv, clusterMode, stopClusters } from './cluster';
import { NAMESPACE as CHART_NAMESPACE, operatorEnvFromChart } from './chart';
import type { KubeApiServer } from './kube-apiserver';

// In cluster mode every file's API servers go when its tests are done.
if (clusterMode()) afterAll(() => stopClusters());

export interface TestService {
  service: RunningService;
  url: string;
  /** The bootstrap team's API key. */
  key: string;
  teamId: string;
  dataDir: string;
  api: (method: string, path: string, body?: unknown, options?: RequestOptions) => Promise<ApiResponse>;
  stop: () => Promise<void>;
}

export interface RequestOptions {
  key?: string | null;
  headers?: Record<string, string>;
  rawBody?: string;
}

export interface ApiResponse {
  status: number;
  headers: Headers;
  body: any;
}

export function tempDataDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-test-'));
}

/**
 * Fast simulated delays unless a test asks otherwise. No shedding on event-loop delay: on a
 * busy CI machine a test process is now and then starved for over the production default
 * of a second, and a whole file's requests came back 503 service_overloaded; the shedding
 * itself is test/api/connections.test.ts's, which turns it on.
 */
export const FAST_ENV = { CLOUDPLANE_SIM_DELAY_MS: '50', CLOUDPLANE_LOG_LEVEL: 'silent', CLOUDPLANE_OVERLOAD_MAX_EVENT_LOOP_DELAY_MS: '0' };

/**
 * For tests that assert a transient state (`stopping`, `deleting`) with the next request:
 * 50 ms is shorter than one request on a loaded 2-core CI machine, so the state may be over.
 */
export const TRANSIENT_ENV = { CLOUDPLANE_SIM_DELAY_MS: '500' };

export async function request(url: string, method: string, urlPath: string, body?: unknown, options: RequestOptions = {}): Promise<ApiResponse> {
  const headers: Record<string, string> = { ...(options.headers ?? {}) };
  if (options.key) headers.authorization = `Bearer ${options.key}`;
  let payload: string | undefined = options.rawBody;
  if (body !== undefined) {
    payload = JSON.stringify(body);
    headers['content-type'] ??= 'application/json';
  }
  const response = await fetch(`${url}${urlPath}`, { method, headers, body: payload });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    // Not JSON (e.g. /metrics); keep the text.
  }
  return { status: response.status, headers: response.headers, body: parsed };
}

/** `logTo`: where the service's log goes (at the level `env` sets), for a test that reads it. */
export async function startTestService(env: Record<string, string> = {}, dataDir = tempDataDir(), logTo?: { write(line: string): void }): Promise<TestService> {
  const cluster = clusterMode() ? await clusterEnv(dataDir) : {};
  // CLOUDPLANE_TEST_LOG_LEVEL (e.g. `error`) shows the services' logs when a test is being debugged.
  const logLevel = process.env.CLOUDPLANE_TEST_LOG_LEVEL ? { CLOUDPLANE_LOG_LEVEL: process.env.CLOUDPLANE_TEST_LOG_LEVEL } : {};
  // The embedded default's local drivers run real software (PostgreSQL); a test asks for them by
  // name. On the Kubernetes store the provider stays the store's default (kubernetes).
  const embedded = !clusterMode() && env.CLOUDPLANE_STORE !== 'kubernetes';
  const simulated = embedded ? { CLOUDPLANE_PROVIDER: 'simulated' } : {};
  const config = loadConfig({ ...FAST_ENV, CLOUDPLANE_PORT: '0', CLOUDPLANE_DATA_DIR: dataDir, ...simulated, ...cluster, ...env, ...logLevel });
  const service = await startService(config, createLogger(config.logLevel, logTo));
  const key = env.CLOUDPLANE_BOOTSTRAP_API_KEY ?? service.bootstrap?.token;
  if (!key) throw new Error('no bootstrap key: start tests in a fresh data directory or pass CLOUDPLANE_BOOTSTRAP_API_KEY');
  return {
    service,
    url: service.url,
    key,
    teamId: service.bootstrap?.teamId ?? '',
    dataDir,
    api: (method, urlPath, body, options = {}) =>
      request(service.url, method, urlPath, body, { key: options.key === undefined ? key : options.key, ...options }),
    stop: () => service.stop(),
  };
}

/** Polls `probe` until it returns a truthy value, or fails after `timeoutMs`. */
export async function eventually<T>(probe: () => Promise<T | undefined | null | false>, timeoutMs = 10_000, intervalMs = 25): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value) return value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms${last ? `: ${String(last)}` : ''}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/** Waits until GET `path` shows `data.status === status`; returns the record. */
export async function waitForStatus(t: Pick<TestService, 'api'>, urlPath: string, status: string, timeoutMs = 10_000): Promise<any> {
  return eventually(async () => {
    const res = await t.api('GET', urlPath);
    return res.status === 200 && res.body.data.status === status ? res.body.data : null;
  }, timeoutMs);
}

/**
 * The service in cluster mode on `cluster`, in the chart's system namespace, as the chart's
 * ServiceAccount under exactly the chart's RBAC; `env` adds to (or overrides) that.
 */
export function startServiceUnderChartRbac(cluster: KubeApiServer, env: Record<string, string> = {}, dataDir?: string): Promise<TestService> {
  const clusterEnv = {
    CLOUDPLANE_STORE: 'kubernetes',
    ...operatorEnvFromChart(cluster, cluster.workDir),
    CLOUDPLANE_SYSTEM_NAMESPACE: CHART_NAMESPACE,
  };
  return dataDir ? startTestService({ ...clusterEnv, ...env }, dataDir) : startTestService({ ...clusterEnv, ...env });
}
