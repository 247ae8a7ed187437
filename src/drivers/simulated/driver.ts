/**
 * What every simulated driver shares: provisioning, configuration changes and release as
 * simulated operations recorded in the resource's status.external, so the answer to
 * observe is a function of that record, the resource's identity and the clock. A family
 * adds its outputs, the state it observes and the operations of its own (a server's power
 * moves) through three small hooks.
 */
import { createHash } from 'node:crypto';
import { Type, Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { canonicalJson } from '../../lib/canonical-json';
import type { Driver, DriverHealth, ExternalRecord, Managed, Observation, Step } from '../types';
import type { Progress, Simulation } from './simulation';
import { promised } from '../../lib/promised';

const Started = {
  started_at: Type.String(),
  fails: Type.Optional(Type.Boolean()),
  reason: Type.Optional(Type.String()),
  duration_ms: Type.Optional(Type.Integer({ minimum: 0 })),
};

/** An operation as the record keeps it: when it started, whether it will fail, and what a fault asked of it (faults.ts). */
export type StartedOperation = { started_at: string; fails?: boolean; reason?: string; duration_ms?: number };

/** The record of a simulated resource: each operation with when it was started. */
export const SimulatedRecord = Type.Object({
  /** Provisioning, with the configuration it applied. */
  provision: Type.Object({ ...Started, config: Type.String() }),
  /** The last configuration change asked for. */
  configure: Type.Optional(Type.Object({ ...Started, config: Type.String() })),
  /** The last power move (servers), settling the reboot requests made before it. */
  power: Type.Optional(Type.Object({ ...Started, state: Type.Union([Type.Literal('on'), Type.Literal('off')]), requests: Type.Integer({ minimum: 0 }) })),
  /** The last reboot (servers), carrying out reboot requests up to `requests`. */
  reboot: Type.Optional(Type.Object({ ...Started, requests: Type.Integer({ minimum: 0 }) })),
  release: Type.Optional(Type.Object(Started)),
});
export type SimulatedRecord = Static<typeof SimulatedRecord>;

/** What a family adds to the observation of a provisioned resource. */
export interface FamilyState<Observed> {
  observed: Observed;
  /** Whether the family's own desired state is reached (default: yes). */
  upToDate?: boolean;
  failure?: string | null;
  pollAfterMs?: number;
}

const minDefined = (...values: Array<number | undefined>): number | undefined => {
  const defined = values.filter((v): v is number => v !== undefined);
  return defined.length ? Math.min(...defined) : undefined;
};

/** The remaining time of a pending operation, else nothing to wait for. */
const pendingMs = (progress: Progress): number | undefined => (progress.state === 'pending' ? progress.remainingMs : undefined);

export abstract class SimulatedDriver<Desired, Outputs, Observed> implements Driver<Desired, Outputs, Observed> {
  constructor(
    protected readonly family: string,
    protected readonly sim: Simulation,
  ) {}

  /** The part of the desired state a configuration change applies. */
  protected abstract configOf(desired: Desired): unknown;
  /** What a provisioned resource gives out. */
  protected abstract outputsOf(resource: Managed<Desired>): Outputs;
  /** The family's state; `ready`: provisioned and not being released. */
  protected abstract stateOf(resource: Managed<Desired>, record: SimulatedRecord, ready: boolean): FamilyState<Observed>;

  /** The family's own operations an update starts (a power move); the record as it is by default. */
  protected plan(_resource: Managed<Desired>, record: SimulatedRecord): Promise<SimulatedRecord> {
    return Promise.resolve(record);
  }

  observe(resource: Managed<Desired>): Promise<Observation<Outputs, Observed>> {
    return promised(() => {
      const record = this.recordOf(resource);
      if (!record) return { exists: false };
      if (record.release) {
        const release = this.progressOf(resource, 'release', record.release);
        if (release.state !== 'pending') {
          this.sim.releaseAddress(resource.id);
          return { exists: false };
        }
        const { observed } = this.stateOf(resource, record, false);
        return { exists: true, upToDate: true, ready: false, outputs: null, observed, failure: null, pollAfterMs: release.remainingMs };
      }
      const provision = this.progressOf(resource, 'provision', record.provision);
      const ready = provision.state === 'succeeded';
      const config = this.configProgress(resource, record);
      const family = this.stateOf(resource, record, ready);
      return {
        exists: true,
        upToDate: config.upToDate && (family.upToDate ?? true),
        ready,
        outputs: ready ? this.outputsOf(resource) : null,
        observed: family.observed,
        failure: provision.state === 'failed' ? provision.reason : (family.failure ?? null),
        rejected: config.rejected,
        pollAfterMs: minDefined(pendingMs(provision), config.pollAfterMs, family.pollAfterMs),
      };
    });
  }

  async create(resource: Managed<Desired>): Promise<Step> {
    const record: SimulatedRecord = { provision: { ...(await this.start(resource, 'provision')), config: this.configHash(resource.desired) } };
    return this.step(resource, 'provision', record.provision, record);
  }

  async update(resource: Managed<Desired>): Promise<Step> {
    const current = this.recordOf(resource);
    if (!current) return this.create(resource);
    let record = current;
    const config = this.configProgress(resource, record);
    // A change not yet asked for, or one the provider rejected, is asked for (again).
    if (!config.upToDate && config.pollAfterMs === undefined) {
      record = { ...record, configure: { ...(await this.start(resource, 'configure')), config: this.configHash(resource.desired) } };
    }
    record = await this.plan(resource, record);
    return { external: record, pollAfterMs: this.sim.baseDelayMs(this.family), replayable: true };
  }

  async delete(resource: Managed<Desired>): Promise<Step> {
    const current = this.recordOf(resource);
    if (!current) return { external: {} };
    if (current.release) return { external: current, pollAfterMs: this.remainingOf(resource, 'release', current.release) };
    const release = await this.start(resource, 'release');
    return this.step(resource, 'release', release, { ...current, release });
  }

  health(): DriverHealth {
    return this.sim.outcomesOf(this.family).health();
  }

  protected progressOf(resource: Managed<Desired>, operation: string, started: StartedOperation): Progress {
    return this.sim.progress(this.family, resource.id, { name: operation, ...started });
  }

  /** An operation starting now, with its outcome decided (simulation.ts, begin). */
  protected async start(resource: Managed<Desired>, operation: string): Promise<StartedOperation> {
    const { name: _name, ...started } = await this.sim.begin(this.family, resource.team, resource.id, operation);
    return started;
  }

  protected remainingOf(resource: Managed<Desired>, operation: string, started: StartedOperation): number {
    return Math.max(1, this.sim.endOf(this.family, resource.id, { name: operation, ...started }) - Date.now());
  }

  /** A simulated operation lost with its record is simply started again. */
  private step(resource: Managed<Desired>, operation: string, started: StartedOperation, record: SimulatedRecord): Step {
    return { external: record, pollAfterMs: this.remainingOf(resource, operation, started), replayable: true };
  }

  /** The driver's record of the resource, or null before the first create (or when unreadable: made again). */
  private recordOf(resource: Managed<Desired>): SimulatedRecord | null {
    return Value.Check(SimulatedRecord, resource.external) ? resource.external : null;
  }

  private configHash(desired: Desired): string {
    return createHash('sha256')
      .update(canonicalJson(this.configOf(desired)))
      .digest('hex')
      .slice(0, 16);
  }

  /** Whether the configuration asked for last is the desired one and applied. */
  protected configProgress(resource: Managed<Desired>, record: SimulatedRecord): { upToDate: boolean; rejected: string | null; pollAfterMs?: number } {
    const wanted = this.configHash(resource.desired);
    const attempt = record.configure;
    if (!attempt) return { upToDate: record.provision.config === wanted, rejected: null };
    if (attempt.config !== wanted) return { upToDate: false, rejected: null };
    const progress = this.progressOf(resource, 'configure', attempt);
    if (progress.state === 'pending') return { upToDate: false, rejected: null, pollAfterMs: progress.remainingMs };
    if (progress.state === 'failed') return { upToDate: false, rejected: progress.reason };
    return { upToDate: true, rejected: null };
  }
}

/** A record for tests and drivers that start from a known state. */
export function simulatedRecordOf(value: ExternalRecord | null): SimulatedRecord | null {
  return Value.Check(SimulatedRecord, value) ? value : null;
}
