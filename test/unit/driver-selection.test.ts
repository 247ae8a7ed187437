/**
 * Which driver does each family's work: the provider's default for the mode, per-family
 * overrides, and a start-up refused, with the setting named, when a family cannot have
 * the driver asked for. The refusal is checked on the built service as an operator would
 * meet it.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../../src/config';
import { createLogger } from '../../src/logger';
import { buildFamilies } from '../../src/families/build';
import { FAMILY_MODULES } from '../../src/families';
import { families } from '../../src/resources/registry';
import { findPostgres } from '../../src/drivers/local/postgres-install';
import { PG_VERSIONS } from '../../src/resources/database';
import { findKubernetes } from '../../src/drivers/local/kube-install';
import { KUBERNETES_VERSIONS } from '../../src/resources/kubernetes-cluster';
import { tempDataDir } from '../helpers/service';

const logger = createLogger('silent');
const build = (env: Record<string, string>) => buildFamilies(FAMILY_MODULES, families, loadConfig(env), logger).drivers;

/** Cluster mode's settings; building drivers only reads the kubeconfig, it contacts nobody. */
function clusterEnv(): Record<string, string> {
  const file = path.join(tempDataDir(), 'kubeconfig');
  const kubeconfig = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'c', cluster: { server: 'https://127.0.0.1:1' } }],
    users: [{ name: 'u', user: { token: 'unused' } }],
    contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
    'current-context': 'x',
  };
  fs.writeFileSync(file, JSON.stringify(kubeconfig));
  return { CLOUDPLANE_STORE: 'kubernetes', CLOUDPLANE_KUBECONFIG: file };
}

describe('driver selection', () => {
  it('uses the simulated driver of every family under the simulated provider', () => {
    expect(build({ CLOUDPLANE_PROVIDER: 'simulated' }).chosen).toEqual({
      server: 'simulated',
      load_balancer: 'simulated',
      vpn_gateway: 'simulated',
      bucket: 'simulated',
      file_share: 'simulated',
      database: 'simulated',
      kubernetes_cluster: 'simulated',
      job: 'simulated',
      backup: 'simulated',
    });
  });

  it('defaults to the local provider on the embedded default: a real PostgreSQL for databases where installed, the simulated drivers elsewhere', () => {
    const dir = tempDataDir();
    const env = { CLOUDPLANE_LOCAL_DATABASE_DIR: path.join(dir, 'databases') };
    fs.chmodSync(dir, 0o711);
    const installed = findPostgres(null, env.CLOUDPLANE_LOCAL_DATABASE_DIR, PG_VERSIONS);
    const kubernetes = findKubernetes([], KUBERNETES_VERSIONS);
    const chosen = build(env).chosen;
    expect(chosen.database).toBe('missing' in installed ? 'simulated' : 'local');
    expect(chosen.kubernetes_cluster).toBe('missing' in kubernetes ? 'simulated' : 'local');
    const others = Object.keys(chosen).filter((f) => f !== 'database' && f !== 'kubernetes_cluster');
    expect(Object.entries(chosen).filter(([family]) => others.includes(family))).toEqual(others.map((f) => [f, 'simulated']));
  });

  it('falls back to the simulated database driver, saying why, where PostgreSQL is missing; refuses to start when it was named', () => {
    const missing = { CLOUDPLANE_POSTGRES_BIN_DIR: path.join(tempDataDir(), 'no-postgres') };
    const lines: string[] = [];
    const said = createLogger('info', { write: (line: string) => lines.push(line) });
    const chosen = buildFamilies(FAMILY_MODULES, families, loadConfig(missing), said).drivers.chosen;
    expect(chosen.database).toBe('simulated');
    expect(lines.join('')).toContain("the database family's local driver cannot run here");
    expect(lines.join('')).toContain('no-postgres lacks initdb, pg_ctl, postgres, pg_basebackup');
    expect(() => build({ ...missing, CLOUDPLANE_DRIVER_DATABASE: 'local' })).toThrow(/CLOUDPLANE_DRIVER_DATABASE=local: .*no-postgres lacks initdb/);
  });

  it('takes a per-family choice, and the older CLOUDPLANE_JOB_DRIVER for jobs', () => {
    expect(build({ CLOUDPLANE_DRIVER_LOAD_BALANCER: 'simulated' }).chosen.load_balancer).toBe('simulated');
    expect(loadConfig({ CLOUDPLANE_JOB_DRIVER: 'kubernetes' }).drivers.overrides).toEqual({ job: 'kubernetes' });
  });

  it.each([
    [{ CLOUDPLANE_DRIVER_LOAD_BALANCER: 'f5' }, /CLOUDPLANE_DRIVER_LOAD_BALANCER=f5: the load_balancer family has no driver "f5"; it has simulated/],
    [{ CLOUDPLANE_DRIVER_JOB: 'kubernetes' }, /CLOUDPLANE_DRIVER_JOB=kubernetes needs cluster mode \(CLOUDPLANE_STORE=kubernetes\)/],
    [{ CLOUDPLANE_DRIVER_QUEUE: 'simulated' }, /CLOUDPLANE_DRIVER_QUEUE names no family with drivers; those are load_balancer, vpn_gateway, server/],
  ])('refuses %j, naming the setting', (env, message) => {
    expect(() => build(env)).toThrow(message);
  });

  it('takes the s3 bucket driver in either mode, for no other family', () => {
    expect(build({ CLOUDPLANE_DRIVER_BUCKET: 's3' }).chosen.bucket).toBe('s3');
    expect(build({ ...clusterEnv(), CLOUDPLANE_DRIVER_BUCKET: 's3' }).chosen.bucket).toBe('s3');
    // The kubernetes provider does not pick it: an outside service is chosen by name only.
    expect(build(clusterEnv()).chosen.bucket).toBe('simulated');
    expect(() => build({ CLOUDPLANE_DRIVER_FILE_SHARE: 's3' })).toThrow(/CLOUDPLANE_DRIVER_FILE_SHARE=s3: the file_share family has no driver "s3"/);
    expect(() => build({ CLOUDPLANE_DRIVER_BUCKET: 'minio' })).toThrow(/the bucket family has no driver "minio"; it has simulated, s3/);
  });

  it('takes the cloudnative-pg database driver by name in cluster mode only: it is never detected', () => {
    expect(build({ ...clusterEnv(), CLOUDPLANE_DRIVER_DATABASE: 'cloudnative-pg' }).chosen.database).toBe('cloudnative-pg');
    // Installed or not, the kubernetes provider keeps the StatefulSet driver.
    expect(build(clusterEnv()).chosen.database).toBe('kubernetes');
    expect(() => build({ CLOUDPLANE_DRIVER_DATABASE: 'cloudnative-pg' })).toThrow(/CLOUDPLANE_DRIVER_DATABASE=cloudnative-pg needs cluster mode/);
    expect(() => build({ ...clusterEnv(), CLOUDPLANE_DRIVER_SERVER: 'cloudnative-pg' })).toThrow(/the server family has no driver "cloudnative-pg"/);
    expect(() => build({ ...clusterEnv(), CLOUDPLANE_DRIVER_DATABASE: 'crunchy' })).toThrow(/it has simulated, kubernetes, local, cloudnative-pg/);
  });

  it('takes kwok as the node provider of Kubernetes clusters in cluster mode, and refuses any other, saying what comes next', () => {
    expect(loadConfig(clusterEnv()).kubernetes?.kubernetesClusters.nodeProvider).toBe('kwok');
    expect(() => loadConfig({ ...clusterEnv(), CLOUDPLANE_KUBERNETES_NODE_PROVIDER: 'cluster-api' })).toThrow(
      /CLOUDPLANE_KUBERNETES_NODE_PROVIDER must be kwok, got "cluster-api" \(Cluster API MachineDeployments are the next provider/,
    );
  });

  it('refuses an unknown provider', () => {
    expect(() => loadConfig({ CLOUDPLANE_PROVIDER: 'aws' })).toThrow(/CLOUDPLANE_PROVIDER must be local, simulated or kubernetes, got "aws"/);
  });

  it('defaults to the kubernetes provider in cluster mode, where each family without a kubernetes driver keeps the simulated one', () => {
    const drivers = build(clusterEnv());
    expect(drivers.chosen).toMatchObject({
      server: 'kubernetes',
      load_balancer: 'kubernetes',
      vpn_gateway: 'kubernetes',
      file_share: 'kubernetes',
      database: 'kubernetes',
      kubernetes_cluster: 'kubernetes',
      job: 'kubernetes',
      backup: 'kubernetes',
    });
    expect(drivers.chosen.bucket).toBe('simulated');
    expect(build({ ...clusterEnv(), CLOUDPLANE_PROVIDER: 'simulated' }).chosen.job).toBe('simulated');
  });

  it('the service refuses to start, before it opens anything, when a family has no such driver', () => {
    const dataDir = tempDataDir();
    const main = path.join(__dirname, '../../dist/src/main.js');
    const result = spawnSync(process.execPath, [main], {
      env: { ...process.env, CLOUDPLANE_DATA_DIR: dataDir, CLOUDPLANE_PORT: '0', CLOUDPLANE_DRIVER_SERVER: 'kubevirt' },
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(result.status).not.toBe(0);
    expect(result.stdout + result.stderr).toContain('CLOUDPLANE_DRIVER_SERVER=kubevirt: the server family has no driver "kubevirt"');
    expect(result.stdout).not.toContain('is listening');
  });
});
