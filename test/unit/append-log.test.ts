/**
 * The append log under the embedded store and bus: group commit, durability before the
 * promise resolves, a torn tail cut off on open, and the durable file replacement.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { AppendLog, lockDataDir, writeFileDurable } from '../../src/store/append-log';

const tempDir = () => fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-log-'));
const lines = (file: string) =>
  fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));

describe('AppendLog', () => {
  let dir: string;
  let file: string;
  beforeEach(() => {
    dir = tempDir();
    file = path.join(dir, 'test.log');
  });
  afterEach(() => {
    jest.restoreAllMocks();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('returns nothing for a new log and creates the file', async () => {
    const log = new AppendLog(file);
    expect(log.open()).toEqual([]);
    expect(fs.existsSync(file)).toBe(true);
    expect(log.size).toBe(0);
    await log.close();
  });

  it('resolves an append only after the record was written and synced, and reads it back in order', async () => {
    const log = new AppendLog(file);
    log.open();
    const order: string[] = [];
    const fdatasync = fs.fdatasync;
    jest.spyOn(fs, 'fdatasync').mockImplementation(((fd: number, cb: (err: NodeJS.ErrnoException | null) => void) =>
      fdatasync(fd, (err) => {
        order.push('synced');
        cb(err);
      })) as typeof fs.fdatasync);
    await log.append({ n: 1 }).then(() => order.push('resolved'));
    expect(order).toEqual(['synced', 'resolved']);
    // Visible through another descriptor the moment the promise resolved.
    expect(lines(file)).toEqual([{ n: 1 }]);
    await log.append({ n: 2, text: 'grüße, 😀' });
    await log.close();

    const reopened = new AppendLog(file);
    expect(reopened.open()).toEqual([{ n: 1 }, { n: 2, text: 'grüße, 😀' }]);
    expect(reopened.size).toBe(fs.statSync(file).size);
    await reopened.close();
  });

  it('commits every record appended in one turn with one write and one sync', async () => {
    const log = new AppendLog(file);
    log.open();
    const writes = jest.spyOn(fs, 'write');
    const syncs = jest.spyOn(fs, 'fdatasync');
    await Promise.all(Array.from({ length: 100 }, (_, i) => log.append({ i })));
    expect(syncs).toHaveBeenCalledTimes(1);
    expect(writes).toHaveBeenCalledTimes(1);
    expect(lines(file).map((r) => r.i)).toEqual(Array.from({ length: 100 }, (_, i) => i));
    await log.close();
  });

  it('batches records appended while a commit is in flight into the next commit', async () => {
    const log = new AppendLog(file);
    log.open();
    const syncs = jest.spyOn(fs, 'fdatasync');
    const first = log.append({ batch: 1 });
    // Wait until the first batch is being written, then append 50 more in separate turns.
    await new Promise((resolve) => setImmediate(resolve));
    const later: Promise<void>[] = [];
    for (let i = 0; i < 50; i++) {
      later.push(log.append({ batch: 2, i }));
      await Promise.resolve();
    }
    await Promise.all([first, ...later]);
    // 51 records, far fewer syncs: the 50 late ones shared at most a couple of commits.
    expect(syncs.mock.calls.length).toBeLessThanOrEqual(3);
    expect(lines(file)).toHaveLength(51);
    await log.close();
  });

  it("bounds a commit's size, and puts one team's record in the first commit however many another queued before it", async () => {
    const log = new AppendLog(file);
    log.open();
    const writes: number[] = [];
    const write = fs.write.bind(fs);
    jest.spyOn(fs, 'write').mockImplementation(((fd: number, buffer: Buffer, ...rest: unknown[]) => {
      writes.push(buffer.length);
      return (write as (...args: unknown[]) => void)(fd, buffer, ...rest);
    }) as typeof fs.write);
    const padding = 'x'.repeat(1000);
    const order: string[] = [];
    const burst = Array.from({ length: 2000 }, (_, i) => log.append({ team: 'noisy', i, padding }, 'noisy').then(() => order.push(`noisy-${i}`)));
    const single = log.append({ team: 'quiet' }, 'quiet').then(() => order.push('quiet'));
    await Promise.all([...burst, single]);

    // 2 MB in commits of about 256 KiB, the quiet record in the first; each team's own in order.
    expect(writes.length).toBeGreaterThanOrEqual(7);
    expect(Math.max(...writes)).toBeLessThan(256 * 1024 + 2000);
    expect(order.indexOf('quiet')).toBeLessThan(2);
    const records = lines(file);
    expect(records.filter((r) => r.team === 'noisy').map((r) => r.i)).toEqual(Array.from({ length: 2000 }, (_, i) => i));
    expect(records.findIndex((r) => r.team === 'quiet')).toBeLessThan(2);
    expect(log.records).toBe(2001);
    await log.close();
  });

  it('cuts off a torn last line on open and appends after the last complete record', async () => {
    const complete = `${JSON.stringify({ n: 1 })}\n${JSON.stringify({ n: 2, s: 'é' })}\n`;
    fs.writeFileSync(file, `${complete}{"n":3,"s":"half a rec`);
    const log = new AppendLog(file);
    expect(log.open()).toEqual([{ n: 1 }, { n: 2, s: 'é' }]);
    expect(fs.statSync(file).size).toBe(Buffer.byteLength(complete));
    await log.append({ n: 4 });
    await log.close();
    const reopened = new AppendLog(file);
    expect(reopened.open()).toEqual([{ n: 1 }, { n: 2, s: 'é' }, { n: 4 }]);
    await reopened.close();
  });

  it('cuts off a torn tail that ends inside a multi-byte character', async () => {
    const good = `${JSON.stringify({ s: 'ok' })}\n`;
    const torn = Buffer.from(`${JSON.stringify({ s: '😀😀' })}\n`).subarray(0, 10);
    fs.writeFileSync(file, Buffer.concat([Buffer.from(good), torn]));
    const log = new AppendLog(file);
    expect(log.open()).toEqual([{ s: 'ok' }]);
    expect(fs.statSync(file).size).toBe(Buffer.byteLength(good));
    await log.close();
  });

  it('treats a complete but unparsable last line as torn, and refuses corruption in the middle', async () => {
    fs.writeFileSync(file, '{"n":1}\n{"n":\n');
    const log = new AppendLog(file);
    expect(log.open()).toEqual([{ n: 1 }]);
    await log.close();

    fs.writeFileSync(file, '{"n":1}\n{"n":\n{"n":3}\n');
    expect(() => new AppendLog(file).open()).toThrow(/corrupt record in the middle of the log at byte 8/);
  });

  // How fast is bench material (no test asserts a timing); this one checks that all of it is read.
  it('opens a large log whole', async () => {
    const record = JSON.stringify({ payload: 'x'.repeat(180) });
    fs.writeFileSync(file, `${record}\n`.repeat(50_000)); // ~9 MB
    const log = new AppendLog(file);
    const records = log.open<{ payload: string }>();
    expect(records).toHaveLength(50_000);
    expect(records[49_999].payload).toHaveLength(180);
    await log.close();
  });

  it('reads committed records back as their text, before and after a rewrite, and refuses records it does not have', async () => {
    const log = new AppendLog(file);
    log.open();
    const records = Array.from({ length: 6 }, (_, n) => ({ n, text: `ünï ${'y'.repeat(n)}` }));
    await Promise.all(records.map((r) => log.append(r)));
    expect(log.readRecords(0, 6).map((text) => JSON.parse(text))).toEqual(records);
    expect(log.readRecords(2, 3)).toEqual([JSON.stringify(records[2])]);
    expect(log.readRecords(4, 4)).toEqual([]);
    expect(() => log.readRecords(5, 7)).toThrow(RangeError);
    // Runs of records by size: each record here is 24-29 bytes with its newline.
    expect(log.recordsWithin(0, 50)).toBe(2);
    expect(log.recordsWithin(4, 1)).toBe(5); // at least one
    expect(log.recordsWithin(2, 1e9)).toBe(6);
    await log.rewrite(3, { header: 1 }, () => undefined);
    expect(log.readRecords(0, 4).map((text) => JSON.parse(text))).toEqual([{ header: 1 }, ...records.slice(3)]);
    await log.close();
    // After a restart, from the records open() found.
    const reopened = new AppendLog(file);
    reopened.open();
    expect(JSON.parse(reopened.readRecords(3, 4)[0])).toEqual(records[5]);
    await reopened.close();
  });

  it('rejects every record of a failed commit and leaves no part of it behind for a later commit to uncover', async () => {
    const log = new AppendLog(file);
    log.open();
    await log.append({ n: 0, pad: 'acknowledged' });
    // The disk fills up in the middle of the next commit: part of it reaches the file, then ENOSPC.
    const realWrite = fs.write;
    jest
      .spyOn(fs, 'write')
      .mockImplementationOnce(((
        fd: number,
        buffer: Buffer,
        offset: number,
        length: number,
        position: number,
        cb: (err: NodeJS.ErrnoException | null, n: number) => void,
      ) => realWrite(fd, buffer, offset, Math.floor((length * 5) / 6), position, cb)) as unknown as typeof fs.write)
      .mockImplementationOnce(((...args: unknown[]) => {
        const cb = args[args.length - 1] as (err: NodeJS.ErrnoException) => void;
        cb(Object.assign(new Error('no space left on device'), { code: 'ENOSPC' }));
      }) as unknown as typeof fs.write);
    const failed = [1, 2, 3].map((n) => log.append({ n, pad: 'rejected-rec' }));
    for (const p of failed) await expect(p).rejects.toThrow('no space left on device');
    // Space is back: a single record of the same length goes where the failed batch began.
    await log.append({ n: 4, pad: 'acknowledged' });
    await log.close();

    const reopened = new AppendLog(file);
    // Records 1-3 were refused to their writers; none of them may come back.
    expect(reopened.open()).toEqual([
      { n: 0, pad: 'acknowledged' },
      { n: 4, pad: 'acknowledged' },
    ]);
    await reopened.close();
  });

  it('cuts the remnant of a failed commit before the next commit, also when cutting it failed at first', async () => {
    const log = new AppendLog(file);
    log.open();
    await log.append({ n: 0, pad: 'acknowledged' });
    const realWrite = fs.write;
    jest
      .spyOn(fs, 'write')
      .mockImplementationOnce(((
        fd: number,
        buffer: Buffer,
        offset: number,
        length: number,
        position: number,
        cb: (err: NodeJS.ErrnoException | null, n: number) => void,
      ) => realWrite(fd, buffer, offset, Math.floor((length * 5) / 6), position, cb)) as unknown as typeof fs.write)
      .mockImplementationOnce(((...args: unknown[]) => {
        const cb = args[args.length - 1] as (err: NodeJS.ErrnoException) => void;
        cb(Object.assign(new Error('no space left on device'), { code: 'ENOSPC' }));
      }) as unknown as typeof fs.write);
    // The cut right after the failure fails too (an I/O error); the remnant stays for now.
    jest.spyOn(fs, 'ftruncateSync').mockImplementationOnce(() => {
      throw Object.assign(new Error('input/output error'), { code: 'EIO' });
    });
    const failed = [1, 2, 3].map((n) => log.append({ n, pad: 'rejected-rec' }));
    for (const p of failed) await expect(p).rejects.toThrow('no space left on device');
    await log.append({ n: 4, pad: 'acknowledged' });
    await log.close();

    const reopened = new AppendLog(file);
    expect(reopened.open()).toEqual([
      { n: 0, pad: 'acknowledged' },
      { n: 4, pad: 'acknowledged' },
    ]);
    await reopened.close();
  });

  it('drain waits for everything appended so far, after which the log is idle', async () => {
    const log = new AppendLog(file);
    log.open();
    const pending = Array.from({ length: 10 }, (_, i) => log.append({ i }));
    expect(log.idle).toBe(false);
    await log.drain();
    expect(log.idle).toBe(true);
    await Promise.all(pending);
    expect(lines(file)).toHaveLength(10);
    log.truncateSync();
    expect(fs.statSync(file).size).toBe(0);
    expect(log.size).toBe(0);
    await log.close();
  });
});

describe('writeFileDurable', () => {
  it('replaces the file whole and leaves no temporary file behind', () => {
    const dir = tempDir();
    const file = path.join(dir, 'state.json');
    writeFileDurable(file, '{"v":1}');
    writeFileDurable(file, '{"v":2}');
    expect(fs.readFileSync(file, 'utf8')).toBe('{"v":2}');
    expect(fs.readdirSync(dir)).toEqual(['state.json']);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('is unaffected by a temporary file a crash left behind', () => {
    const dir = tempDir();
    const file = path.join(dir, 'state.json');
    writeFileDurable(file, '{"v":1}');
    fs.writeFileSync(`${file}.tmp`, '{"v":');
    expect(fs.readFileSync(file, 'utf8')).toBe('{"v":1}');
    writeFileDurable(file, '{"v":3}');
    expect(fs.readFileSync(file, 'utf8')).toBe('{"v":3}');
    fs.rmSync(dir, { recursive: true, force: true });
  });
});

describe('lockDataDir', () => {
  it('refuses a data directory locked by a live process and takes over the lock of a dead one', async () => {
    const dir = tempDir();
    const other = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
    try {
      fs.writeFileSync(path.join(dir, 'LOCK'), String(other.pid));
      expect(() => lockDataDir(dir)).toThrow(`data directory ${dir} is in use by process ${other.pid}`);
    } finally {
      other.kill('SIGKILL');
      await new Promise((resolve) => other.once('exit', resolve));
    }
    // The holder died without cleaning up (kill -9): its lock is stale.
    const unlock = lockDataDir(dir);
    expect(fs.readFileSync(path.join(dir, 'LOCK'), 'utf8')).toBe(String(process.pid));
    unlock();
    expect(fs.existsSync(path.join(dir, 'LOCK'))).toBe(false);
    fs.rmSync(dir, { recursive: true, force: true });
  });
});
