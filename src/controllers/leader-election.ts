/**
 * Leader election on a coordination.k8s.io/v1 Lease, the way client-go's leaderelection
 * does it: every replica serves the API, one holds the Lease and runs the leader's work.
 *
 * - A candidate takes the Lease when it is free (no holder), or when the record it sees
 *   has not changed for the Lease's duration by its own clock (so clock skew between
 *   replicas does not matter). Every write carries the resourceVersion it read, so of two
 *   candidates only one wins.
 * - The leader renews every leaseDuration/3. If it cannot renew for 2/3 of the duration it
 *   stops its leading work, before any standby can see the Lease as expired.
 * - A graceful stop ends the leading work, then clears the holder so a standby takes over
 *   on its next try instead of waiting out the Lease.
 * In embedded mode there is one process and no election: SoleLeader always leads.
 */
import { CoordinationV1Api, V1Lease, V1LeaseSpec, V1MicroTime } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { httpCode } from '../store/kubernetes/http-code';
import { messageOf } from '../lib/unknown-values';

export interface Leadership {
  start(): Promise<void>;
  /** Ends the leading work (and gives the Lease up, if held). */
  stop(): Promise<void>;
  isLeader(): boolean;
}

export interface LeaderCallbacks {
  onStartedLeading(): Promise<void>;
  onStoppedLeading(): Promise<void>;
}

export interface LeaderElectorOptions extends LeaderCallbacks {
  api: CoordinationV1Api;
  namespace: string;
  name: string;
  identity: string;
  leaseDurationMs: number;
  logger: Logger;
}

export class SoleLeader implements Leadership {
  private leading = false;
  constructor(private readonly callbacks: LeaderCallbacks) {}

  async start(): Promise<void> {
    await this.callbacks.onStartedLeading();
    this.leading = true;
  }

  async stop(): Promise<void> {
    if (!this.leading) return;
    this.leading = false;
    await this.callbacks.onStoppedLeading();
  }

  isLeader(): boolean {
    return this.leading;
  }
}

export class LeaderElector implements Leadership {
  private readonly durationSeconds: number;
  private readonly retryMs: number;
  private readonly renewDeadlineMs: number;
  private lease: V1Lease | null = null;
  /** When this replica last saw the Lease record change, by its own clock. */
  private observed: { record: string; at: number } | null = null;
  private leading = false;
  private stopped = false;
  private timer: NodeJS.Timeout | null = null;
  private deadline: NodeJS.Timeout | null = null;
  private ticking: Promise<void> = Promise.resolve();
  /** Start and stop of the leading work run one after the other, never overlapping. */
  private transitions: Promise<void> = Promise.resolve();

  constructor(private readonly o: LeaderElectorOptions) {
    this.durationSeconds = Math.max(1, Math.round(o.leaseDurationMs / 1000));
    this.retryMs = Math.max(100, Math.floor(o.leaseDurationMs / 3));
    this.renewDeadlineMs = Math.floor((o.leaseDurationMs * 2) / 3);
  }

  isLeader(): boolean {
    return this.leading;
  }

  /** Makes the first attempt (and, if it wins, starts the leading work) before returning. */
  async start(): Promise<void> {
    this.ticking = this.tick();
    await this.ticking;
    await this.transitions;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.ticking;
    if (this.leading) {
      this.stepDown('stopping');
      await this.transitions;
      await this.release();
    }
    await this.transitions;
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.ticking = this.tick();
    }, delayMs);
  }

  private async tick(): Promise<void> {
    let next = this.retryMs;
    try {
      if (this.leading) await this.renew();
      else await this.tryAcquire();
    } catch (err) {
      // Renewal failures are retried sooner, so one lost request does not cost the Lease.
      if (this.leading) next = Math.max(100, Math.floor(this.retryMs / 3));
      this.o.logger.warn({ err: { message: messageOf(err), code: httpCode(err) }, lease: this.o.name }, 'lease request failed');
    }
    this.schedule(next);
  }

  // API call: leader election: the Lease (read here, created and replaced below)
  private async read(): Promise<V1Lease | null> {
    try {
      return await this.o.api.readNamespacedLease({ name: this.o.name, namespace: this.o.namespace });
    } catch (err) {
      if (httpCode(err) === 404) return null;
      throw err;
    }
  }

  private async tryAcquire(): Promise<void> {
    const current = await this.read();
    const sentAt = Date.now();
    const now = new V1MicroTime(sentAt);
    if (!current) {
      const body: V1Lease = {
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name: this.o.name, namespace: this.o.namespace },
        spec: { holderIdentity: this.o.identity, leaseDurationSeconds: this.durationSeconds, acquireTime: now, renewTime: now, leaseTransitions: 0 },
      };
      try {
        this.lease = await this.o.api.createNamespacedLease({ namespace: this.o.namespace, body });
      } catch (err) {
        if (httpCode(err) === 409) return; // another replica created it first
        throw err;
      }
      this.becomeLeader(sentAt);
      return;
    }
    if (!this.acquirable(current)) return;
    const spec = current.spec ?? {};
    const transitions = (spec.leaseTransitions ?? 0) + (spec.holderIdentity === this.o.identity ? 0 : 1);
    const body: V1Lease = {
      ...current,
      spec: {
        ...spec,
        holderIdentity: this.o.identity,
        leaseDurationSeconds: this.durationSeconds,
        acquireTime: now,
        renewTime: now,
        leaseTransitions: transitions,
      },
    };
    try {
      this.lease = await this.o.api.replaceNamespacedLease({ name: this.o.name, namespace: this.o.namespace, body });
    } catch (err) {
      if (httpCode(err) === 409) return; // another candidate won this round
      throw err;
    }
    this.becomeLeader(sentAt);
  }

  private acquirable(lease: V1Lease): boolean {
    const spec = lease.spec ?? {};
    if (!spec.holderIdentity || spec.holderIdentity === this.o.identity) return true;
    const record = `${spec.holderIdentity}|${String(spec.renewTime)}|${lease.metadata?.resourceVersion}`;
    const now = Date.now();
    if (this.observed?.record !== record) this.observed = { record, at: now };
    return now > this.observed.at + (spec.leaseDurationSeconds ?? this.durationSeconds) * 1000;
  }

  private async renew(): Promise<void> {
    const sentAt = Date.now();
    const held = this.lease ?? (await this.read());
    const body = (lease: V1Lease, spec: V1LeaseSpec): V1Lease => ({ ...lease, spec: { ...spec, renewTime: new V1MicroTime(sentAt) } });
    try {
      if (!held || held.spec?.holderIdentity !== this.o.identity) {
        this.stepDown('the lease has another holder');
        return;
      }
      this.lease = await this.o.api.replaceNamespacedLease({ name: this.o.name, namespace: this.o.namespace, body: body(held, held.spec) });
    } catch (err) {
      if (httpCode(err) !== 409) throw err;
      // Our copy is stale: renew on the current one if it is still ours.
      const current = await this.read();
      if (!current || current.spec?.holderIdentity !== this.o.identity) {
        this.stepDown('the lease has another holder');
        return;
      }
      this.lease = await this.o.api.replaceNamespacedLease({ name: this.o.name, namespace: this.o.namespace, body: body(current, current.spec) });
    }
    if (this.leading) this.armDeadline(sentAt);
  }

  private becomeLeader(sentAt: number): void {
    this.leading = true;
    this.armDeadline(sentAt);
    this.o.logger.info({ lease: `${this.o.namespace}/${this.o.name}`, identity: this.o.identity }, 'became leader');
    this.transitions = this.transitions.then(async () => {
      try {
        await this.o.onStartedLeading();
      } catch (err) {
        this.o.logger.error({ err }, 'starting the leader work failed; stepping down');
        this.stepDown('the leader work did not start');
      }
    });
  }

  /** Counted from when the last successful renewal was sent, so it errs on the early side. */
  private armDeadline(sentAt: number): void {
    if (this.deadline) clearTimeout(this.deadline);
    const remaining = sentAt + this.renewDeadlineMs - Date.now();
    this.deadline = setTimeout(
      () => {
        this.stepDown('the lease could not be renewed in time');
      },
      Math.max(0, remaining),
    );
  }

  private stepDown(reason: string): void {
    if (this.deadline) clearTimeout(this.deadline);
    this.deadline = null;
    if (!this.leading) return;
    this.leading = false;
    this.lease = null;
    this.o.logger.warn({ lease: `${this.o.namespace}/${this.o.name}`, identity: this.o.identity, reason }, 'stopped leading');
    this.transitions = this.transitions.then(async () => {
      try {
        await this.o.onStoppedLeading();
      } catch (err) {
        this.o.logger.error({ err }, 'stopping the leader work failed');
      }
    });
  }

  /** Clears the holder if it is still us, so a standby need not wait for the Lease to expire. */
  private async release(): Promise<void> {
    try {
      const current = await this.read();
      if (!current || current.spec?.holderIdentity !== this.o.identity) return;
      const now = new V1MicroTime();
      const spec = { ...current.spec, holderIdentity: undefined, leaseDurationSeconds: 1, acquireTime: now, renewTime: now };
      await this.o.api.replaceNamespacedLease({ name: this.o.name, namespace: this.o.namespace, body: { ...current, spec } });
      this.o.logger.info({ lease: `${this.o.namespace}/${this.o.name}` }, 'released the lease');
    } catch (err) {
      // The standby then takes over once the Lease expires.
      this.o.logger.warn({ err: { message: messageOf(err), code: httpCode(err) } }, 'releasing the lease failed');
    }
  }
}
