/**
 * Faults a team asks of the simulated drivers (docs/api.md, "The simulation API"): "the next N operations
 * of this family fail with this error", "take this long". A test suite breaks its local
 * cloud on purpose with them, where CLOUDPLANE_SIM_FAILURES only draws failures at a rate.
 *
 * They are kept in the store's records (one entry per team), so the replica that takes the
 * request and the leader whose drivers start the operations agree; an operation takes the
 * first fault that matches it by a compare-and-swap, so two operations never share one.
 * A team's faults reach its own resources only.
 */
import { Type, Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import type { NamedEntries } from '../../store/types';
import type { RecordKind } from '../../store/record-kinds';
import { newId } from '../../lib/ids';
import { nowIso } from '../../lib/time';
import { StringEnum } from '../../resources/schema-kit';

/** What every simulated resource does: be made, be changed, be released. */
const LIFECYCLE = ['provision', 'configure', 'release'] as const;

/** The operations of each family's simulated driver that a fault can reach. */
export const FAULT_OPERATIONS: Readonly<Record<string, readonly string[]>> = {
  load_balancer: LIFECYCLE,
  vpn_gateway: LIFECYCLE,
  server: [...LIFECYCLE, 'power_off', 'power_on', 'reboot'],
  bucket: LIFECYCLE,
  file_share: LIFECYCLE,
  database: LIFECYCLE,
  kubernetes_cluster: LIFECYCLE,
  backup: ['snapshot', 'restore'],
};

/** Releasing never fails (a stuck deletion teaches nothing); it can only be slowed. */
export const NEVER_FAILS = 'release';

/** The most faults a team may have waiting, and the most operations one fault may reach. */
export const MAX_FAULTS_PER_TEAM = 100;
export const MAX_FAULT_COUNT = 1000;
/** The longest an operation can be made to take: a day. */
export const MAX_FAULT_DELAY_MS = 86_400_000;

export const Fault = Type.Object({
  id: Type.String({ description: 'Fault id (`flt_…`).' }),
  family: Type.String({ description: 'The family whose operations it reaches.' }),
  operation: Type.Union([Type.String(), Type.Null()], {
    description: 'The operation it reaches; null: any of the family (releasing only when named).',
  }),
  remaining: Type.Integer({ minimum: 1, description: 'How many more operations it reaches.' }),
  error: Type.Union([Type.String(), Type.Null()], { description: 'The reason the operation fails with; null: it does not fail.' }),
  delay_ms: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], {
    description: 'How long the operation takes, exactly; null: its simulated time.',
  }),
  // No `format`: Value.Check, which reads the stored faults back, knows no formats.
  created_at: Type.String({ description: 'When it was asked for (ISO 8601).' }),
});
export type Fault = Static<typeof Fault>;

/** What a team asks for (POST /api/v1/simulation/faults). */
export const FaultCreate = Type.Object(
  {
    family: StringEnum(Object.keys(FAULT_OPERATIONS), { description: 'The family whose operations it reaches.' }),
    operation: Type.Optional(
      Type.String({
        maxLength: 32,
        description: `One operation of the family (${Object.entries(FAULT_OPERATIONS)
          .map(([family, ops]) => `${family}: ${ops.join(', ')}`)
          .join('; ')}); without it, any but release.`,
      }),
    ),
    count: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_FAULT_COUNT, description: 'How many operations it reaches; 1 by default.' })),
    error: Type.Optional(
      Type.String({ minLength: 1, maxLength: 500, description: 'The reason the operations fail with (their resource goes failed with it).' }),
    ),
    delay_ms: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_FAULT_DELAY_MS, description: 'How long each operation takes, exactly.' })),
  },
  { additionalProperties: false },
);

/** What an operation a fault reached is made to do. */
export interface FaultEffect {
  error: string | null;
  delayMs: number | null;
}

const ENTRY = 'simulation-faults';
const StoredFaults = Type.Array(Fault);

/** The entry is removed by the simulation API (DELETE /api/v1/simulation/faults) or emptied by the operations it reaches. */
export const SIMULATION_FAULT_RECORDS: RecordKind = {
  prefix: ENTRY,
  sealed: false,
  keptBy: 'the simulation API and the simulated drivers (drivers/simulated/faults.ts)',
};

const matches = (fault: Fault, family: string, operation: string) =>
  fault.family === family && (fault.operation === operation || (fault.operation === null && operation !== NEVER_FAILS));

/** How many times a compare-and-swap is tried before the faults are left as they are (writers racing). */
const SWAP_ATTEMPTS = 8;

export class SimulationFaults {
  constructor(private readonly records: NamedEntries) {}

  async list(team: string): Promise<Fault[]> {
    return faultsOf(await this.records.get(team, ENTRY));
  }

  /** Adds a fault at the end of the team's list; undefined when the team already has MAX_FAULTS_PER_TEAM. */
  async add(team: string, asked: Omit<Fault, 'id' | 'created_at'>): Promise<Fault | undefined> {
    const fault: Fault = { id: newId('flt'), ...asked, created_at: nowIso() };
    const added = await this.change(team, (faults) => (faults.length >= MAX_FAULTS_PER_TEAM ? undefined : [...faults, fault]));
    return added ? fault : undefined;
  }

  /** Removes one fault, or every fault of the team without an id; says whether there was any. */
  async remove(team: string, id?: string): Promise<boolean> {
    const removed = await this.change(team, (faults) => {
      const kept = id === undefined ? [] : faults.filter((f) => f.id !== id);
      return kept.length === faults.length ? undefined : kept;
    });
    return removed;
  }

  /** The effect on an operation starting now: that of the first waiting fault it matches, which it uses up once. */
  async take(team: string, family: string, operation: string): Promise<FaultEffect | undefined> {
    let taken: Fault | undefined;
    const changed = await this.change(team, (faults) => {
      const index = faults.findIndex((f) => matches(f, family, operation));
      if (index < 0) return undefined;
      const fault = faults[index];
      taken = fault;
      const rest = fault.remaining > 1 ? [{ ...fault, remaining: fault.remaining - 1 }] : [];
      return [...faults.slice(0, index), ...rest, ...faults.slice(index + 1)];
    });
    if (!changed || !taken) return undefined;
    return { error: operation === NEVER_FAILS ? null : taken.error, delayMs: taken.delay_ms };
  }

  /** Applies `next` to the team's faults by compare-and-swap; false when it asked for no change. */
  private async change(team: string, next: (faults: Fault[]) => Fault[] | undefined): Promise<boolean> {
    for (let attempt = 0; attempt < SWAP_ATTEMPTS; attempt++) {
      const stored = await this.records.get(team, ENTRY);
      const changed = next(faultsOf(stored));
      if (!changed) return false;
      const data = { faults: JSON.stringify(changed) };
      if (!stored) {
        const added = await this.records.add(team, ENTRY, data);
        if (added.faults === data.faults) return true;
        continue;
      }
      if (await this.records.swap(team, ENTRY, stored, data)) return true;
    }
    throw new Error(`the simulation faults of team ${team} kept changing under ${SWAP_ATTEMPTS} attempts to change them`);
  }
}

function faultsOf(stored: Record<string, string> | undefined): Fault[] {
  if (!stored?.faults) return [];
  const parsed: unknown = JSON.parse(stored.faults);
  return Value.Check(StoredFaults, parsed) ? parsed : [];
}
