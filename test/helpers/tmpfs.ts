/**
 * Real file systems that run out of space or refuse writes, for the tests of what the
 * service does when its data directory fails: a small tmpfs (needs root and mount(8), as
 * the test machines have). Mounting that fails fails the test with the reason: these
 * tests must not pass by skipping what they are about.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';

function run(command: string, args: string[]): void {
  try {
    execFileSync(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    const stderr = (err as { stderr?: Buffer }).stderr?.toString().trim();
    throw new Error(`${command} ${args.join(' ')} failed: ${stderr || (err as Error).message}`);
  }
}

export class Tmpfs {
  private constructor(readonly dir: string) {}

  /** Mounts a tmpfs of `sizeBytes` (and at most `inodes` files) on a fresh directory. */
  static mount(sizeBytes: number, inodes = 100_000): Tmpfs {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-tmpfs-'));
    try {
      run('mount', ['-t', 'tmpfs', '-o', `size=${sizeBytes},nr_inodes=${inodes},mode=0700`, 'tmpfs', dir]);
    } catch (err) {
      fs.rmSync(dir, { recursive: true, force: true });
      throw new Error(
        `this test needs a tmpfs it can fill, and mounting one failed (it runs as root with mount(8) on the test machines): ${(err as Error).message}`,
      );
    }
    return new Tmpfs(dir);
  }

  /**
   * Makes `sub` (a directory in the tmpfs) read-only for every file opened from now on, and
   * back. `mount -o remount,ro` of the tmpfs itself answers EBUSY while the service has
   * files open for writing (its logs) — the kernel refuses to make a mount with writers
   * read-only — so a read-only bind mount is put over the directory instead: what the
   * service opens by path (a new positions file, a snapshot, a probe) is refused with
   * EROFS, as on a volume made read-only, while writes to files it already holds open still
   * land. The bind is made read-only on a staging point nobody opens files through and
   * then moved over `sub` in one step: binding over `sub` first and remounting it there
   * raced the service, which could open a file through the fresh bind in between (EBUSY).
   * Root ignores chmod, so that is no way to refuse writes here.
   */
  readOnly(sub: string): void {
    const staging = fs.mkdtempSync(path.join(this.dir, 'ro-staging-'));
    run('mount', ['--bind', sub, staging]);
    run('mount', ['-o', 'remount,bind,ro', staging]);
    run('mount', ['--move', staging, sub]);
    fs.rmdirSync(staging);
  }

  readWrite(sub: string): void {
    run('mount', ['-o', 'remount,bind,rw', sub]);
  }

  /**
   * Fills the file system's free space (one file under `filler/`, so it works with no
   * inode left) until it answers ENOSPC, large chunks first and then page by page.
   */
  fillBytes(): void {
    const fd = fs.openSync(path.join(this.fillerDir(), 'bytes'), 'a');
    try {
      for (const chunk of [1024 * 1024, 64 * 1024, 4096, 512, 1]) {
        const data = Buffer.alloc(chunk, 0x61);
        for (;;) {
          try {
            fs.writeSync(fd, data);
          } catch (err) {
            if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
            break;
          }
        }
      }
    } finally {
      fs.closeSync(fd);
    }
  }

  /** Uses up the file system's inodes with empty files: no new file can be made, existing ones still grow. */
  fillInodes(): void {
    const filler = this.fillerDir();
    fs.closeSync(fs.openSync(path.join(filler, 'bytes'), 'a')); // for a fillBytes() after this one
    for (let n = 0; ; n++) {
      try {
        fs.closeSync(fs.openSync(path.join(filler, `inode-${n}`), 'w'));
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
        return;
      }
    }
  }

  /** Gives back everything the fill methods took. */
  free(): void {
    fs.rmSync(path.join(this.dir, 'filler'), { recursive: true, force: true });
  }

  /** Unmounts every one of `mounts`, trying all before it throws for those that failed. */
  static unmountAll(mounts: Tmpfs[]): void {
    const failures: string[] = [];
    for (const m of mounts) {
      try {
        m.unmount();
      } catch (err) {
        failures.push((err as Error).message);
      }
    }
    if (failures.length > 0) throw new Error(`could not unmount: ${failures.join('; ')}`);
  }

  /** Unmounts whatever is mounted on or under the tmpfs and removes its directory; safe to call twice. */
  unmount(): void {
    const mounted = fs
      .readFileSync('/proc/self/mounts', 'utf8')
      .split('\n')
      .map((line) => line.split(' ')[1])
      .filter((point) => point && (point === this.dir || point.startsWith(`${this.dir}/`)))
      .sort((a, b) => b.length - a.length);
    for (const point of [...mounted]) {
      try {
        run('umount', [point]);
      } catch {
        run('umount', ['-l', point]);
      }
    }
    fs.rmSync(this.dir, { recursive: true, force: true });
  }

  private fillerDir(): string {
    const filler = path.join(this.dir, 'filler');
    fs.mkdirSync(filler, { recursive: true });
    return filler;
  }
}
