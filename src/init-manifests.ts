/**
 * CLOUDPLANE_INIT_DIR (docs/testing.md, "A local cloud made from manifests"): the
 * resources an install starts with, as the custom resource manifests kubectl takes
 * (examples/), applied at its first start to the team made then. Every manifest is read and
 * its shape checked (by its CRD's schema) before anything opens, so a bad one stops start-up naming its file and
 * document; each is then created without a status and taken in by its family's reconciler
 * exactly as a kubectl-made resource is (controllers/adoption.ts: the create rules, the
 * quota, a refused spec shown `failed` with the API's message).
 */
import fs from 'node:fs';
import path from 'node:path';
import Ajv, { ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { parseAllDocuments } from 'yaml';
import type { AnyFamily } from './resources/family';
import { families } from './resources/registry';
import { crdFor } from './resources/crd';
import type { Store } from './store/types';
import { GROUP, VERSION } from './store/kubernetes/names';
import { newId } from './lib/ids';
import { isRecord } from './lib/unknown-values';

/** The families a manifest may make: those a kubectl user makes (a backup names its server's id, an incident is opened by alerts). */
const INIT_FAMILIES = ['load_balancer', 'vpn_gateway', 'server', 'bucket', 'file_share', 'database', 'kubernetes_cluster', 'job', 'alert_policy', 'webhook'];
const API_VERSION = `${GROUP}/${VERSION}`;
/** Bounds of what is read at start-up: the folder is the operator's, its size is still no reason to stall a start. */
const MAX_FILE_BYTES = 1024 * 1024;
const MAX_MANIFESTS = 1000;

export interface InitManifest {
  /** `web.yaml#2`: the file and the document's place in it, for messages. */
  source: string;
  family: AnyFamily;
  spec: Record<string, unknown>;
}

export class InitManifestError extends Error {}

/** The manifests of `dir` (*.yaml, *.yml, *.json, in name order), their shapes checked; throws naming the first that is wrong. */
export function readInitManifests(dir: string): InitManifest[] {
  if (!fs.existsSync(dir) || !fs.statSync(dir).isDirectory()) throw new InitManifestError(`CLOUDPLANE_INIT_DIR=${dir} is not a directory`);
  const kinds = new Map(families.filter((f) => INIT_FAMILIES.includes(f.name)).map((f) => [f.kind, f]));
  const ajv = addFormats(new Ajv({ allErrors: false, strict: false }));
  const validators = new Map<AnyFamily, ValidateFunction>();
  const manifests: InitManifest[] = [];
  const files = fs
    .readdirSync(dir)
    .filter((name) => /\.(ya?ml|json)$/.test(name))
    .sort();
  for (const name of files) {
    const file = path.join(dir, name);
    if (fs.statSync(file).size > MAX_FILE_BYTES) throw new InitManifestError(`${file}: larger than ${MAX_FILE_BYTES} bytes`);
    const documents = parseAllDocuments(fs.readFileSync(file, 'utf8'));
    if (!Array.isArray(documents)) throw new InitManifestError(`${file}: not YAML`);
    documents.forEach((document, index) => {
      const source = `${file}#${index + 1}`;
      if (document.errors.length > 0) throw new InitManifestError(`${source}: ${document.errors[0].message}`);
      const manifest: unknown = document.toJS();
      if (manifest === null || manifest === undefined) return;
      if (!isRecord(manifest) || manifest.apiVersion !== API_VERSION) throw new InitManifestError(`${source}: apiVersion must be ${API_VERSION}`);
      const family = typeof manifest.kind === 'string' ? kinds.get(manifest.kind) : undefined;
      if (!family) throw new InitManifestError(`${source}: kind must be one of ${[...kinds.keys()].join(', ')}`);
      // The shape its CRD gives the spec: what kubectl apply would accept of the same manifest.
      const validate = validators.get(family) ?? ajv.compile(crdFor(family).spec.versions[0].schema.openAPIV3Schema.properties.spec);
      validators.set(family, validate);
      if (!isRecord(manifest.spec) || !validate(manifest.spec)) {
        const problem = validate.errors?.[0];
        throw new InitManifestError(`${source}: spec${problem?.instancePath.replace(/\//g, '.') ?? ''} ${problem?.message ?? 'must be an object'}`);
      }
      manifests.push({ source, family, spec: manifest.spec });
      if (manifests.length > MAX_MANIFESTS) throw new InitManifestError(`${dir}: more than ${MAX_MANIFESTS} manifests`);
    });
  }
  return manifests;
}

/** Creates each manifest's resource in `team`, status-less, for its reconciler to take in. */
export async function applyInitManifests(store: Store, team: string, manifests: readonly InitManifest[]): Promise<void> {
  for (const { family, spec } of manifests) {
    await store.create({ meta: { kind: family.kind, id: newId(family.idPrefix), team }, spec, status: {} });
  }
}
