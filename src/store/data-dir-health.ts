/**
 * Whether the data directory takes durable writes. The embedded store and event bus
 * report each write that failed here, by source (`store.log`, `events.positions`, ...),
 * and each source that works again. While any source is failing, persistence is `stale`:
 * reads answer from memory, the store refuses writes (503 persistence_unavailable), and
 * the failed writes are retried in the background until the directory takes them, so the
 * service recovers by itself once the disk has room or is writable again.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import type { PersistenceState } from './types';
import { dataDirFailingWrites } from '../metrics';

/** One page: a probe that fits shows the file system can give out space, not only that a file can be made. */
const PROBE_BYTES = 4096;

export class DataDirHealth {
  private readonly failing = new Map<string, unknown>();

  constructor(
    readonly dir: string,
    private readonly logger?: Logger,
  ) {}

  get state(): PersistenceState {
    return this.failing.size > 0 ? 'stale' : 'synced';
  }

  /** The oldest failure not yet resolved, for the errors of refused writes. */
  get cause(): unknown {
    return this.failing.values().next().value;
  }

  failed(source: string, err: unknown): void {
    if (!this.failing.has(source)) {
      this.logger?.error(
        { err, source, dataDir: this.dir },
        'a write to the data directory failed: writes are refused (503) and it is retried in the background until the directory takes writes again',
      );
    }
    this.failing.set(source, err);
    dataDirFailingWrites.set(this.failing.size);
  }

  recovered(source: string): void {
    if (!this.failing.delete(source)) return;
    dataDirFailingWrites.set(this.failing.size);
    this.logger?.warn({ source, dataDir: this.dir, stillFailing: [...this.failing.keys()] }, 'a write to the data directory that had failed succeeded');
  }

  /**
   * Writes, syncs and removes a small file in the directory; throws what the file system
   * answered. Cheap enough to try every few seconds while the directory fails, where the
   * write that failed (a snapshot) may not be.
   */
  probe(): void {
    const file = path.join(this.dir, '.write-probe');
    try {
      const fd = fs.openSync(file, 'w', 0o600);
      try {
        fs.writeSync(fd, Buffer.alloc(PROBE_BYTES));
        fs.fsyncSync(fd);
      } finally {
        fs.closeSync(fd);
      }
    } finally {
      try {
        fs.rmSync(file, { force: true });
      } catch {
        // A directory that refuses the removal refused the write first.
      }
    }
  }
}
