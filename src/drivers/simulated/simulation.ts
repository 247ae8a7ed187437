/**
 * The simulation behind the simulated drivers of the embedded default. Nothing runs for
 * real, but it behaves like a cloud: an operation takes a configurable time (with
 * jitter), fails at a configurable rate per family, and hands out addresses. Every answer
 * is a function of the operation's identity (family, resource id, operation, the time it
 * was started, as the driver recorded it in the resource's status) and the clock, so the
 * simulation agrees with itself across restarts of the operator and between replicas.
 */
import { createHash } from 'node:crypto';
import type { SimulationConfig } from '../../config';
import { HEALTH_WINDOW_MS, OutcomeWindow } from '../health';
import { ExpiringSet } from '../../lib/expiring-set';
import { nowIso } from '../../lib/time';
import type { SimulationFaults } from './faults';

/** A number in [0, 1) drawn from the hash of `parts`: the same parts, the same number. */
export function draw(...parts: Array<string | number>): number {
  const digest = createHash('sha256').update(parts.join('\u0000')).digest();
  return digest.readUInt32BE(0) / 2 ** 32;
}

/** Why a simulated operation failed, by operation name. */
const FAILURE_REASONS: Record<string, string> = {
  provision: 'the provider ran out of capacity in this region',
  configure: 'the provider rejected the configuration change',
  power_off: 'the hypervisor did not confirm the shutdown',
  power_on: 'the hypervisor could not start the machine',
  reboot: 'the hypervisor did not confirm the reboot',
  snapshot: "the provider could not snapshot the server's disk",
  restore: "the provider could not write the backup back to the server's disk",
};

/** An operation as a simulated driver records it: when it was started. */
export interface SimulatedOperation {
  name: string;
  started_at: string;
  /** Decided when it started (willFail); records written before that was kept lack it. */
  fails?: boolean;
  /** Why it fails, when a fault asked through the simulation API decided it (faults.ts). */
  reason?: string;
  /** How long it takes, when a fault of the simulation API set it; else drawn from the family's delay. */
  duration_ms?: number;
}

export type Progress = { state: 'pending'; remainingMs: number } | { state: 'succeeded' } | { state: 'failed'; reason: string };

/** At most this many outcomes are remembered as counted (a burst beyond it may count some twice). */
const RECORDED_MAX = 1_000_000;

export class Simulation {
  private readonly outcomes = new Map<string, OutcomeWindow>();
  /**
   * The outcomes counted within the health window, so that one seen again (a resync, a
   * status write that failed) is not counted twice. Only the window's need keeping: an
   * outcome older than it no longer counts, and a Set of every operation ever grew with
   * the install's history.
   */
  private readonly recorded = new ExpiringSet(RECORDED_MAX, HEALTH_WINDOW_MS);
  private readonly addresses = new Map<string, string>();
  private readonly addressOwners = new Map<string, string>();
  /** The faults teams asked for (CLOUDPLANE_SIMULATION_API); none until the store that keeps them is open. */
  private faults: SimulationFaults | undefined;

  constructor(readonly config: SimulationConfig) {}

  /** Lets operations take the faults kept by `faults` from now on. */
  useFaults(faults: SimulationFaults): void {
    this.faults = faults;
  }

  /**
   * An operation of `team`'s resource starting now, its outcome decided: by the first fault
   * the team asked for that it matches, else drawn against the family's failure rate.
   */
  async begin(family: string, team: string, id: string, name: string, startedAt = nowIso()): Promise<SimulatedOperation> {
    const op: SimulatedOperation = { name, started_at: startedAt };
    const fault = await this.faults?.take(team, family, name);
    const timed = fault?.delayMs != null ? { duration_ms: fault.delayMs } : {};
    if (fault?.error != null) return { ...op, fails: true, reason: fault.error, ...timed };
    return { ...op, fails: fault ? false : this.willFail(family, id, op), ...timed };
  }

  /** Base time of an operation of `family` (CLOUDPLANE_SIM_DELAY_MS, or its CLOUDPLANE_SIM_DELAYS entry). */
  baseDelayMs(family: string): number {
    return this.config.delays[family] ?? this.config.delayMs;
  }

  /** Probability that an operation of `family` fails (CLOUDPLANE_SIM_FAILURES). */
  failureRate(family: string): number {
    return this.config.failures[family] ?? 0;
  }

  /**
   * Whether an operation started now fails: drawn from its identity against the family's
   * failure rate of the moment, and kept in the driver's record, so that an outcome once
   * seen never changes (a later CLOUDPLANE_SIM_FAILURES applies to later operations).
   * Releasing never fails: a stuck deletion teaches nobody anything.
   */
  willFail(family: string, id: string, op: SimulatedOperation): boolean {
    return op.name !== 'release' && draw(family, id, op.name, op.started_at, 'fail') < this.failureRate(family);
  }

  /**
   * How an operation stands now. Provisioning takes the family's base time, other
   * operations half of it, each ±25 %. The outcome counts once towards the family's health.
   */
  progress(family: string, id: string, op: SimulatedOperation): Progress {
    const remainingMs = this.endOf(family, id, op) - Date.now();
    if (remainingMs > 0) return { state: 'pending', remainingMs };
    const failed = op.fails ?? this.willFail(family, id, op);
    const reason = op.reason ?? this.reasonOf(op.name);
    this.recordOnce(family, `${id}/${op.name}/${op.started_at}`, failed ? reason : null, Date.now() + remainingMs);
    if (!failed) return { state: 'succeeded' };
    return { state: 'failed', reason };
  }

  /** When a started operation ends (ms since the epoch): its start plus a delay drawn from its identity. */
  endOf(family: string, id: string, op: SimulatedOperation): number {
    if (op.duration_ms !== undefined) return Date.parse(op.started_at) + op.duration_ms;
    const scale = op.name === 'provision' ? 1 : 0.5;
    const delay = Math.round(this.baseDelayMs(family) * scale * (0.75 + 0.5 * draw(family, id, op.name, op.started_at, 'delay')));
    return Date.parse(op.started_at) + delay;
  }

  /** The outcomes of `family`'s simulated operations, as a driver's health. */
  outcomesOf(family: string): OutcomeWindow {
    let window = this.outcomes.get(family);
    if (!window) {
      window = new OutcomeWindow();
      this.outcomes.set(family, window);
    }
    return window;
  }

  /** How many outcomes are remembered as counted (those of the health window). */
  get rememberedOutcomes(): number {
    return this.recorded.size;
  }

  /**
   * Counts an outcome towards `family`'s health, once per `key` in this process; one that
   * ended (`endedAt`, ms since the epoch) before the health window is not counted at all.
   */
  recordOnce(family: string, key: string, failure: string | null, endedAt: number): void {
    const now = Date.now();
    if (now - endedAt >= HEALTH_WINDOW_MS) return;
    const full = `${family}/${key}`;
    if (this.recorded.has(full, now)) return;
    this.recorded.add(full, now);
    if (failure === null) this.outcomesOf(family).succeeded();
    else this.outcomesOf(family).failed(failure);
  }

  /**
   * An address drawn from the id (100.64.0.0/10, or a /16 for private targets), probing
   * further on a collision with an address this process already handed out.
   */
  allocateAddress(id: string, privatePrefix?: string): string {
    const known = this.addresses.get(id);
    if (known) return known;
    for (let attempt = 0; ; attempt++) {
      const n = Math.floor(draw('address', id, attempt) * 2 ** 22);
      const address = privatePrefix
        ? `${privatePrefix}.${(n >> 8) & 255}.${Math.max(1, n & 255)}`
        : `100.${64 + (n >> 16)}.${(n >> 8) & 255}.${Math.max(1, n & 255)}`;
      const owner = this.addressOwners.get(address);
      if (!owner || owner === id) {
        this.addresses.set(id, address);
        this.addressOwners.set(address, id);
        return address;
      }
    }
  }

  releaseAddress(id: string): void {
    const address = this.addresses.get(id);
    if (address) this.addressOwners.delete(address);
    this.addresses.delete(id);
  }

  private reasonOf(operation: string): string {
    return `${FAILURE_REASONS[operation] ?? 'the provider operation failed'} (simulated failure injected by CLOUDPLANE_SIM_FAILURES)`;
  }
}
