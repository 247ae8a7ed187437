/**
 * Shared records in a NATS JetStream key-value bucket: `create` and `update` at a
 * revision are the compare-and-swap, and the bucket's TTL removes a record nobody wrote
 * for RECORD_TTL_MS, so nothing has to sweep them (every record here is rewritten well
 * within that while it matters: rate windows last a minute, quota claims renew every 10 s).
 * The records hold counts and ids, nothing secret.
 */
import { connect, JSONCodec, KV, NatsConnection } from 'nats';
import type { SharedRecord, SharedRecords } from './shared-records';

export interface NatsSharedRecordsOptions {
  servers: string[];
  bucket: string;
}

const RECORD_TTL_MS = 10 * 60_000;
/** A request to NATS waits at most this: a count that cannot be had degrades to the process's own. */
const REQUEST_TIMEOUT_MS = 2_000;
/** JetStream's "wrong last sequence": another writer changed the record first. */
const WRONG_LAST_SEQUENCE = 10071;
const codec = JSONCodec<Record<string, string>>();

function lostTheRace(err: unknown): boolean {
  const apiError = (err as { api_error?: { err_code?: number } }).api_error;
  return apiError?.err_code === WRONG_LAST_SEQUENCE || /wrong last sequence/i.test(String((err as Error).message));
}

export class NatsSharedRecords implements SharedRecords {
  private nc: NatsConnection | null = null;
  private kv: KV | null = null;

  constructor(private readonly o: NatsSharedRecordsOptions) {}

  async start(): Promise<void> {
    this.nc = await connect({ servers: this.o.servers, name: 'cloudplane-shared-records', maxReconnectAttempts: -1, reconnectTimeWait: 500, timeout: REQUEST_TIMEOUT_MS });
    this.kv = await this.nc.jetstream({ timeout: REQUEST_TIMEOUT_MS }).views.kv(this.o.bucket, { history: 1, ttl: RECORD_TTL_MS });
  }

  async stop(): Promise<void> {
    // Closed, not drained: nothing here waits to be delivered, and a drain waits forever
    // for a server that is gone.
    await this.nc?.close();
    this.nc = null;
    this.kv = null;
  }

  private bucket(): KV {
    if (!this.kv) throw new Error('the shared records are not connected');
    return this.kv;
  }

  async read(name: string): Promise<SharedRecord | undefined> {
    const entry = await this.bucket().get(name);
    if (!entry || entry.operation !== 'PUT') return undefined;
    return { data: codec.decode(entry.value), revision: entry.revision };
  }

  async swap(name: string, expected: SharedRecord | undefined, data: Record<string, string>): Promise<boolean> {
    try {
      if (expected) await this.bucket().update(name, codec.encode(data), expected.revision);
      else await this.bucket().create(name, codec.encode(data));
      return true;
    } catch (err) {
      if (lostTheRace(err)) return false;
      throw err;
    }
  }
}
