/**
 * Shared records in a NATS JetStream key-value bucket: `create` and `update` at a
 * revision are the compare-and-swap, and the bucket's TTL removes a record nobody wrote
 * for RECORD_TTL_MS, so nothing has to sweep them (every record here is rewritten well
 * within that while it matters: rate windows last a minute, quota claims renew every 10 s).
 * The records hold counts and ids, nothing secret.
 *
 * While NATS is out of reach the records fail at once rather than make each caller wait
 * for a timeout (their callers then count alone): from the client's disconnect until its
 * reconnect (calls under way at the disconnect fail with it; the client would hold them
 * for its reconnect), and for a while after any call failed (a connection that is
 * silently dead is only found by its pings).
 */
import { connect, Events, JSONCodec, KV, NatsConnection } from 'nats';
import type { SharedRecord, SharedRecords } from './shared-records';
import { isRecord, messageOf } from '../lib/unknown-values';

export interface NatsSharedRecordsOptions {
  servers: string[];
  bucket: string;
}

const RECORD_TTL_MS = 10 * 60_000;
/** A request to NATS waits at most this: a count that cannot be had degrades to the process's own. */
const REQUEST_TIMEOUT_MS = 2_000;
/** After a failed call, calls fail at once for this long, then try NATS again. */
const FAILED_PAUSE_MS = 5_000;
/** JetStream's "wrong last sequence": another writer changed the record first. */
const WRONG_LAST_SEQUENCE = 10071;
const codec = JSONCodec<Record<string, string>>();

function lostTheRace(err: unknown): boolean {
  const apiError = isRecord(err) ? err.api_error : undefined;
  return (isRecord(apiError) && apiError.err_code === WRONG_LAST_SEQUENCE) || /wrong last sequence/i.test(String(messageOf(err)));
}

export class NatsSharedRecords implements SharedRecords {
  private nc: NatsConnection | null = null;
  private kv: KV | null = null;
  private connected = false;
  private pausedUntil = 0;
  /** How to fail each call under way, when the connection drops. */
  private readonly underWay = new Set<(err: Error) => void>();

  constructor(private readonly o: NatsSharedRecordsOptions) {}

  async start(): Promise<void> {
    this.nc = await connect({
      servers: this.o.servers,
      name: 'cloudplane-shared-records',
      maxReconnectAttempts: -1,
      reconnectTimeWait: 500,
      timeout: REQUEST_TIMEOUT_MS,
    });
    this.kv = await this.nc.jetstream({ timeout: REQUEST_TIMEOUT_MS }).views.kv(this.o.bucket, { history: 1, ttl: RECORD_TTL_MS });
    this.connected = true;
    void this.followConnection(this.nc);
  }

  private async followConnection(nc: NatsConnection): Promise<void> {
    for await (const status of nc.status()) {
      if (status.type === Events.Disconnect) {
        this.connected = false;
        for (const fail of this.underWay) fail(new Error('NATS is not connected'));
      } else if (status.type === Events.Reconnect) {
        this.connected = true;
        this.pausedUntil = 0;
      }
    }
  }

  async stop(): Promise<void> {
    // Closed, not drained: nothing here waits to be delivered, and a drain waits forever
    // for a server that is gone.
    await this.nc?.close();
    this.nc = null;
    this.kv = null;
  }

  private bucket(): KV {
    if (!this.kv || !this.connected) throw new Error('NATS is not connected');
    if (Date.now() < this.pausedUntil) throw new Error('NATS failed a call moments ago');
    return this.kv;
  }

  /** Runs a call; one that fails pauses the records for FAILED_PAUSE_MS. */
  private async call<T>(work: (kv: KV) => Promise<T>): Promise<T> {
    const kv = this.bucket();
    let fail: (err: Error) => void = () => undefined;
    const dropped = new Promise<never>((_, reject) => (fail = reject));
    this.underWay.add(fail);
    const working = work(kv);
    // Failed by a disconnect first, its own end comes later and is no one's to handle.
    working.catch(() => undefined);
    try {
      return await Promise.race([working, dropped]);
    } catch (err) {
      if (!lostTheRace(err)) this.pausedUntil = Date.now() + FAILED_PAUSE_MS;
      throw err;
    } finally {
      this.underWay.delete(fail);
    }
  }

  async read(name: string): Promise<SharedRecord | undefined> {
    const entry = await this.call((kv) => kv.get(name));
    if (!entry || entry.operation !== 'PUT') return undefined;
    return { data: codec.decode(entry.value), revision: entry.revision };
  }

  async swap(name: string, expected: SharedRecord | undefined, data: Record<string, string>): Promise<boolean> {
    try {
      await this.call((kv) => (expected ? kv.update(name, codec.encode(data), expected.revision) : kv.create(name, codec.encode(data))));
      return true;
    } catch (err) {
      if (lostTheRace(err)) return false;
      throw err;
    }
  }
}
