/**
 * A team's quota counted across replicas (docs/api.md, Quotas): the creates admitted and
 * not yet seen by every replica are entries of one shared record per team and quota, the
 * ledger, changed only by a compare-and-swap (store/shared-records.ts). A create reads the
 * ledger, counts what the team holds
 * (the store's count) plus the entries not yet in it, and adds its own entry in the same
 * swap: of two replicas racing for the last place, the second swap fails, reads the
 * first's entry and is refused.
 *
 * An entry is `pending` while its create runs: a lease its holder renews, so a replica
 * that crashed between the claim and the write frees the place once the lease lapses (as
 * idempotency records do). Once written it stays `written` for SETTLE_MS, long enough for
 * every replica's cache to show the resource; until then a replica that does not see it
 * yet counts it by its entry, one that sees it counts it by the store.
 */
import { randomUUID } from 'node:crypto';
import { quotaExceeded, resourceBusy } from '../lib/errors';
import type { Store, StoredObject } from '../store/types';
import { recordName, SharedRecords } from '../store/shared-records';
import type { AnyFamily, BaseStatus } from './family';
import { Periodic } from '../lib/periodic';

export interface LedgerTimes {
  /** How long a pending entry holds its place without renewal (its holder renews at a third of it). */
  leaseMs: number;
  /** How long a written entry stays, for the other replicas' caches to catch up. */
  settleMs: number;
}

export const LEDGER_TIMES: LedgerTimes = { leaseMs: 30_000, settleMs: 10_000 };
/** What a quota counts of a team: which of the family's stored resources, and how many there are now. */
export interface QuotaRule<Spec = unknown> {
  /** Its name in the quotas (resources/quota.ts quotaLimits): the family's, or a narrower one's. */
  quota: string;
  family: AnyFamily;
  /** What one counted resource is called in the refusal ("The team's quota of 10 <title>s ..."). */
  title: string;
  holds(object: StoredObject<Spec, Partial<BaseStatus> | undefined>): boolean;
  held(store: Store, team: string): Promise<number>;
}

/** Swaps lost to other writers before the create is told to retry (each loss is another's progress). */
const SWAP_ATTEMPTS = 20;

type EntryState = 'pending' | 'written';
interface Entry {
  state: EntryState;
  until: number;
}

/** An entry as the secret's string value: `<state> <ISO until>`. */
const encode = (entry: Entry) => `${entry.state} ${new Date(entry.until).toISOString()}`;

function decode(value: string): Entry | undefined {
  const [state, ...rest] = value.split(' ');
  const time = Date.parse(rest.at(0) ?? '');
  if ((state !== 'pending' && state !== 'written') || Number.isNaN(time)) return undefined;
  return { state, until: time };
}

/** One ledger per team and quota, e.g. `quota.team_x.load_balancer`. */
export const ledgerName = (team: string, quota: string) => recordName('quota', team, quota);

/** The live entries of a ledger: lapsed and unreadable ones are dropped. */
function liveEntries(data: Record<string, string>, now: number): Map<string, Entry> {
  const live = new Map<string, Entry>();
  for (const [id, value] of Object.entries(data)) {
    const entry = decode(value);
    if (entry && entry.until > now) live.set(id, entry);
  }
  return live;
}

const dataOf = (entries: Map<string, Entry>) => Object.fromEntries([...entries].map(([id, entry]) => [id, encode(entry)]));

/**
 * Reads the ledger and swaps in `change(entries)` until a swap wins; `change` answers the
 * next entries, or undefined for no write.
 */
async function updateLedger(
  records: SharedRecords,
  name: string,
  change: (entries: Map<string, Entry>, now: number) => Map<string, Entry> | undefined | Promise<Map<string, Entry> | undefined>,
): Promise<void> {
  for (let attempt = 0; attempt < SWAP_ATTEMPTS; attempt++) {
    const stored = await records.read(name);
    const now = Date.now();
    const next = await change(liveEntries(stored?.data ?? {}, now), now);
    if (next === undefined || (await records.swap(name, stored, dataOf(next)))) return;
  }
  throw resourceBusy('Other creates of this team kept changing its quota count; retry.');
}

/** The places a create took in the ledger, held until it ends. */
export class LedgerClaim {
  /** Renews the claim's lease while it lasts. */
  private readonly renewal: Periodic;

  constructor(
    private readonly store: Store,
    private readonly records: SharedRecords,
    private readonly kind: string,
    private readonly team: string,
    private readonly name: string,
    private readonly ids: string[],
    private readonly times: LedgerTimes,
  ) {
    // A renewal that cannot be written is let go: the next one, or the lease's end, settles it.
    this.renewal = new Periodic(
      Math.max(1, Math.floor(times.leaseMs / 3)),
      () => this.rewrite((_id, now) => ({ state: 'pending', until: now + this.times.leaseMs })),
      () => undefined,
    );
    this.renewal.start();
  }

  /**
   * Ends the claim: a written resource's entry stays until every replica sees it, the entry
   * of one never written goes. A create that failed after its write (this replica's cache
   * shows its own writes at once) counts as written.
   */
  async end(succeeded: boolean): Promise<void> {
    await this.renewal.stop();
    const written = new Set<string>();
    for (const id of this.ids) if (succeeded || (await this.store.get(this.kind, this.team, id))) written.add(id);
    // An end that cannot be written leaves the entries to lapse with their lease.
    await this.rewrite((id, now) => (written.has(id) ? { state: 'written', until: now + this.times.settleMs } : undefined)).catch(() => undefined);
  }

  /** Sets each of the claim's entries still pending to `next` (undefined: removes it). */
  private rewrite(next: (id: string, now: number) => Entry | undefined): Promise<void> {
    return updateLedger(this.records, this.name, (entries, now) => {
      const mine = this.ids.filter((id) => entries.get(id)?.state === 'pending');
      if (mine.length === 0) return undefined;
      const changed = new Map(entries);
      for (const id of mine) {
        const entry = next(id, now);
        if (entry) changed.set(id, entry);
        else changed.delete(id);
      }
      return changed;
    });
  }
}

/**
 * Takes places for `named` (or one unnamed placeholder) in the team's ledger of the rule's
 * quota, or throws 422 quota_exceeded when the team holds its quota already.
 */
export async function claimInLedger<Spec>(
  store: Store,
  records: SharedRecords,
  rule: QuotaRule<Spec>,
  team: string,
  limit: number,
  named: string[],
  times = LEDGER_TIMES,
): Promise<LedgerClaim> {
  const name = ledgerName(team, rule.quota);
  const taken = named.length > 0 ? named : [`unnamed-${randomUUID()}`];
  const holding = async (id: string) => {
    const object = await store.get<Spec, Partial<BaseStatus>>(rule.family.kind, team, id);
    // A custom resource is created without its status, which is a second write: until
    // this replica sees that too, the store does not count it, so its entry must.
    if (object?.status.status === undefined) return 'unseen';
    return rule.holds(object) ? 'holds' : 'seen';
  };
  await updateLedger(records, name, async (entries, now) => {
    let held = await rule.held(store, team);
    for (const [id, entry] of entries) {
      // An entry of this create's own id (an earlier attempt's) is replaced, not counted twice.
      if (taken.includes(id)) continue;
      const seen = await holding(id);
      // A pending create counts by its entry (once, if the store shows it already); a
      // written one by the store once this replica sees it, by its entry until then.
      if (entry.state === 'pending') held += seen === 'holds' ? 0 : 1;
      else if (seen === 'unseen') held++;
    }
    // The resource being adopted does not count against itself.
    for (const id of named) if ((await holding(id)) === 'holds') held--;
    if (held + taken.length > limit) throw quotaExceeded(rule.title, limit);
    const next = new Map(entries);
    for (const id of taken) next.set(id, { state: 'pending', until: now + times.leaseMs });
    return next;
  });
  return new LedgerClaim(store, records, rule.family.kind, team, name, taken, times);
}
