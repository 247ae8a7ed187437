/**
 * The Kubernetes store's secrets: one Secret each, in its team's namespace (service-wide
 * ones in the system namespace), labelled as the store's, its store name in an annotation.
 * Reads are served from a table fed by a watch of the store's Secrets in every team
 * namespace; writes go to the API server and update the table with the answer, so a
 * client reads its own writes at once.
 */
import { CoreV1Api } from '@kubernetes/client-node';
import { StoredSecret } from '../types';
import { SecretTable } from '../secret-table';
import { sameJson } from '../../lib/canonical-json';
import { promised } from '../../lib/promised';
import { httpCode } from './http-code';
import { asCached } from './cached-object';
import { NamespacedWatches } from './namespaced-watches';
import { namespaceOfTeam, SECRET_NAME_ANNOTATION, secretObjectName, teamOfNamespace } from './names';
import { isNewer, isOlder, laterVersion } from './resource-version';

/** What the store reads of a Secret: the typed client's answers (V1Secret) and the watch's JSON both are this. */
interface SecretObject {
  metadata?: { namespace?: string; resourceVersion?: string; annotations?: Record<string, string>; creationTimestamp?: string | Date; managedFields?: unknown };
  data?: Record<string, string>;
}

interface SecretEntry {
  team: string;
  name: string;
  data: Record<string, string>;
  raw: SecretObject;
}

/** What the secrets need of the store that holds them. */
export interface SecretsContext {
  core: CoreV1Api;
  /** Namespace of service-wide secrets (the cursor key). */
  systemNamespace: string;
  /** Runs a request, telling an API server that does not answer (503) from one that says no. */
  call: <T>(request: () => Promise<T>) => Promise<T>;
  /** Makes a team's namespace on its first write. */
  ensureNamespace: (namespace: string) => Promise<void>;
}

export class KubernetesSecrets {
  private readonly secrets = new SecretTable<SecretEntry>();
  /**
   * `team/name` of secrets this store removed, with the last resourceVersion seen: a watch
   * event of an earlier version that arrives late must not bring them back. Cleared by a
   * relist, which is authoritative.
   */
  private readonly tombstones = new Map<string, string>();
  private stopWatch: (() => void) | null = null;
  /** Set once the secrets of every team namespace known at the start were listed; a namespace made later starts empty. */
  listed = false;

  constructor(private readonly o: SecretsContext) {}

  /** Watches the store's secrets; resolves once those of every team namespace known now were listed. */
  async watch(watches: NamespacedWatches): Promise<void> {
    // The store's secrets are labelled; they are watched in each team namespace (and the system one).
    const secrets = watches.follow('secrets', {
      replace: (namespace, items) => {
        this.forgetSecretsOf(namespace);
        for (const item of items) this.upsertSecret(item);
      },
      upsert: (item) => {
        this.upsertSecret(item);
      },
      remove: (item) => {
        // The watch is in order and a deletion is an object's last event: no tombstone needed.
        this.secrets.delete(this.secretKeyOf(item));
        this.tombstones.delete(this.secretKeyOf(item));
      },
      forget: (namespace) => {
        this.forgetSecretsOf(namespace);
      },
    });
    this.stopWatch = secrets.stop;
    await secrets.ready.then(() => (this.listed = true));
  }

  stop(): void {
    this.stopWatch?.();
  }

  /** Drops what is cached of a namespace's secrets (it was relisted, or it is gone), and their tombstones. */
  private forgetSecretsOf(namespace: string): void {
    const team = teamOfNamespace(namespace, this.o.systemNamespace);
    for (const key of this.secrets.keysOf(team)) this.secrets.delete(key);
    for (const key of [...this.tombstones.keys()]) if (key.startsWith(`${team}/`)) this.tombstones.delete(key);
  }

  // The secrets' part of the Store interface, as properties the store takes over as its own.

  readonly getSecret = (team: string, name: string): Promise<Record<string, string> | undefined> => {
    const entry = this.secrets.get(`${team}/${name}`);
    return Promise.resolve(entry ? { ...entry.data } : undefined);
  };

  // API call: store and drivers: secrets, written
  readonly putSecret = async (team: string, name: string, data: Record<string, string>): Promise<void> => {
    const namespace = this.namespaceOf(team);
    await this.o.ensureNamespace(namespace);
    const existing = this.secrets.get(`${team}/${name}`);
    this.tombstones.delete(`${team}/${name}`);
    const body = secretBody(name, namespace, data, existing?.raw.metadata?.resourceVersion);
    const write = async (): Promise<SecretObject> =>
      existing
        ? await this.o.call(() => this.o.core.replaceNamespacedSecret({ name: body.metadata.name, namespace, body: body }))
        : await this.o.call(() => this.o.core.createNamespacedSecret({ namespace, body: body }));
    let answer: SecretObject;
    try {
      answer = await write();
    } catch (err) {
      // Another writer got there first (or the cache lagged): write over what is there now.
      if (httpCode(err) !== 409) throw err;
      const current = await this.o.call(() => this.o.core.readNamespacedSecret({ name: body.metadata.name, namespace }));
      body.metadata = { ...body.metadata, resourceVersion: current.metadata?.resourceVersion };
      answer = await this.o.call(() => this.o.core.replaceNamespacedSecret({ name: body.metadata.name, namespace, body: body }));
    }
    this.upsertSecret(answer);
  };

  // API call: store and drivers: secrets, written
  readonly addSecret = async (team: string, name: string, data: Record<string, string>): Promise<Record<string, string>> => {
    const cached = await this.getSecret(team, name);
    if (cached) return cached;
    const namespace = this.namespaceOf(team);
    await this.o.ensureNamespace(namespace);
    const body = secretBody(name, namespace, data);
    let answer: SecretObject;
    try {
      answer = await this.o.call(() => this.o.core.createNamespacedSecret({ namespace, body: body }));
    } catch (err) {
      // Another replica made it first: its data wins.
      if (httpCode(err) !== 409) throw err;
      answer = await this.o.call(() => this.o.core.readNamespacedSecret({ name: body.metadata.name, namespace }));
    }
    this.tombstones.delete(`${team}/${name}`);
    this.upsertSecret(answer);
    return decodedData(answer);
  };

  // API call: store and drivers: secrets, written
  readonly swapSecret = async (team: string, name: string, expected: Record<string, string>, data: Record<string, string>): Promise<boolean> => {
    const namespace = this.namespaceOf(team);
    let current = this.secrets.get(`${team}/${name}`)?.raw;
    for (;;) {
      if (!current || !sameJson(decodedData(current), expected)) return false;
      // The version read is the precondition: a write by anyone since then answers 409.
      const body = secretBody(name, namespace, data, current.metadata?.resourceVersion);
      try {
        const answer = await this.o.call(() => this.o.core.replaceNamespacedSecret({ name: body.metadata.name, namespace, body: body }));
        this.upsertSecret(answer);
        return true;
      } catch (err) {
        if (httpCode(err) === 404) return this.forgetSecret(team, name, current);
        if (httpCode(err) !== 409) throw err;
      }
      try {
        current = await this.o.call(() => this.o.core.readNamespacedSecret({ name: body.metadata.name, namespace }));
      } catch (err) {
        if (httpCode(err) === 404) return this.forgetSecret(team, name, current);
        throw err;
      }
      this.upsertSecret(current);
    }
  };

  /** A secret the API server no longer has leaves the cache at once, not when the watch tells; returns false (nothing written). */
  private forgetSecret(team: string, name: string, lastSeen: SecretObject): false {
    this.secrets.delete(`${team}/${name}`);
    this.tombstones.set(`${team}/${name}`, lastSeen.metadata?.resourceVersion ?? '0');
    return false;
  }

  // API call: store and drivers: secrets, written
  readonly deleteSecret = async (team: string, name: string): Promise<void> => {
    const namespace = this.namespaceOf(team);
    let version = this.secrets.get(`${team}/${name}`)?.raw.metadata?.resourceVersion ?? '0';
    try {
      // The API server answers the deleted Secret (typed a Status, whose metadata holds a resourceVersion too).
      const answer = await this.o.call(() => this.o.core.deleteNamespacedSecret({ name: secretObjectName(name), namespace }));
      version = laterVersion(version, answer?.metadata?.resourceVersion);
    } catch (err) {
      if (httpCode(err) !== 404) throw err;
    }
    this.secrets.delete(`${team}/${name}`);
    this.tombstones.set(`${team}/${name}`, version);
  };

  readonly listSecrets = (prefix: string): Promise<StoredSecret[]> =>
    promised(() =>
      [...this.secrets.withPrefix(prefix)].map((s) => ({
        team: s.team,
        name: s.name,
        data: { ...s.data },
        createdAt: isoOf(s.raw.metadata?.creationTimestamp),
      })),
    );

  private upsertSecret(raw: SecretObject): void {
    asCached(raw);
    const md = raw.metadata ?? {};
    const name = md.annotations?.[SECRET_NAME_ANNOTATION];
    if (!name) return;
    const data = decodedData(raw);
    const team = teamOfNamespace(md.namespace ?? '', this.o.systemNamespace);
    const version = md.resourceVersion ?? '';
    // A late watch event must not undo a write this store already saw answered, nor bring back a deleted secret.
    const current = this.secrets.get(`${team}/${name}`);
    if (current && !isNewer(version, current.raw.metadata?.resourceVersion ?? '')) return;
    const removedAt = this.tombstones.get(`${team}/${name}`);
    if (removedAt !== undefined && !isOlder(removedAt, version)) return;
    this.secrets.set(`${team}/${name}`, { team, name, data, raw });
  }

  private secretKeyOf(raw: SecretObject): string {
    const md = raw.metadata ?? {};
    return `${teamOfNamespace(md.namespace ?? '', this.o.systemNamespace)}/${md.annotations?.[SECRET_NAME_ANNOTATION] ?? ''}`;
  }

  private namespaceOf(team: string): string {
    return namespaceOfTeam(team, this.o.systemNamespace);
  }
}

/** A Secret object holding one store secret; its store name rides in an annotation. */
function secretBody(name: string, namespace: string, data: Record<string, string>, resourceVersion?: string) {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'Opaque',
    metadata: {
      name: secretObjectName(name),
      namespace,
      labels: { 'app.kubernetes.io/managed-by': 'cloudplane' },
      annotations: { [SECRET_NAME_ANNOTATION]: name },
      ...(resourceVersion ? { resourceVersion } : {}),
    },
    stringData: data,
  };
}

/** A metadata timestamp as ISO 8601: a string from a watch, a Date from the client's typed answers (never absent: it throws then). */
function isoOf(timestamp: string | Date | undefined): string {
  return new Date(timestamp ?? Number.NaN).toISOString();
}

function decodedData(raw: SecretObject): Record<string, string> {
  const encoded = raw.data ?? {};
  return Object.fromEntries(Object.entries(encoded).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]));
}
