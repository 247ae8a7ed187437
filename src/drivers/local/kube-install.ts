/**
 * Where this machine's Kubernetes programs are, for the local Kubernetes cluster driver:
 * etcd, kube-apiserver and kwok (KWOK, whose nodes run no containers), looked for in the
 * directories of CLOUDPLANE_KUBERNETES_BIN_PATH, then on PATH. The cluster's minor version is
 * the one kube-apiserver says it is.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { isExecutable } from '../../lib/processes';

export interface KubernetesInstall {
  etcd: string;
  kubeApiServer: string;
  kwok: string;
  /** KWOK's stages beside its binary (`stages.yaml`, as scripts/build-kwok.sh writes them), or null for KWOK's own. */
  kwokStages: string | null;
  /** The minor kube-apiserver serves ('1.34'). */
  minor: string;
}

const PROGRAMS = ['etcd', 'kube-apiserver', 'kwok'] as const;

/** The installation, or what is missing. `supported`: the minors the API offers. */
export function findKubernetes(searchPath: readonly string[], supported: readonly string[]): KubernetesInstall | { missing: string } {
  const dirs = [...searchPath, ...(process.env.PATH ?? '').split(path.delimiter).filter(Boolean)];
  const found = Object.fromEntries(PROGRAMS.map((program) => [program, dirs.map((dir) => path.join(dir, program)).find(isExecutable)]));
  const absent = PROGRAMS.filter((program) => !found[program]);
  const [etcd, kubeApiServer, kwok] = [found.etcd, found['kube-apiserver'], found.kwok];
  if (!etcd || !kubeApiServer || !kwok)
    return { missing: `${absent.join(', ')} not found (in CLOUDPLANE_KUBERNETES_BIN_PATH or on PATH; make test builds them into ~/.cache/cloudplane)` };
  const minor = minorOf(kubeApiServer);
  if (!minor) return { missing: `${kubeApiServer} does not say its version` };
  if (!supported.includes(minor)) return { missing: `kube-apiserver ${minor} is installed; the API offers ${supported.join(', ')}` };
  const stages = path.join(path.dirname(kwok), 'stages.yaml');
  return { etcd, kubeApiServer, kwok, kwokStages: fs.existsSync(stages) ? stages : null, minor };
}

/** "Kubernetes v1.34.4" → "1.34". */
function minorOf(kubeApiServer: string): string | null {
  try {
    const said = execFileSync(kubeApiServer, ['--version'], { timeout: 10_000, encoding: 'utf8' });
    return /v(\d+\.\d+)\./.exec(said)?.[1] ?? null;
  } catch {
    return null;
  }
}
