/**
 * The audit log's text arena (src/lib/text-arena.ts) writing full slabs to a scratch file
 * on a data directory that fills up: a small tmpfs. The slabs written before the disk
 * refused read back from the file, those after stay in memory, the refusal is told once,
 * and the space goes back when the arena closes (the file was removed when it was opened).
 */
import fs from 'node:fs';
import { TextArena } from '../../src/lib/text-arena';
import { Tmpfs } from '../helpers/tmpfs';

const SLAB = 1 << 20;

describe('TextArena on a data directory that fills up', () => {
  let tmpfs: Tmpfs;
  beforeAll(() => {
    tmpfs = Tmpfs.mount(3 * SLAB);
  });
  afterAll(() => {
    tmpfs.unmount();
  });

  it('keeps every text readable: written slabs from the file, the rest in memory once the disk is full', () => {
    const failures: unknown[] = [];
    const arena = new TextArena({ directory: tmpfs.dir, failed: (err) => failures.push(err) });
    const texts = Array.from({ length: 12_000 }, (_, i) => `${String(i).padStart(6, '0')}:${'x'.repeat(600)}`);
    const handles = texts.map((text) => arena.add(text));
    // About 7 MB of texts on a 3 MB disk: some slabs went to the file, then the disk refused one.
    expect(arena.slabsWritten).toBeGreaterThanOrEqual(1);
    expect(failures).toHaveLength(1);
    expect(String(failures[0])).toMatch(/ENOSPC/);
    expect(arena.bytes).toBeGreaterThan(2 * SLAB);
    handles.forEach((handle, i) => expect(arena.text(handle)).toBe(texts[i]));
    // Nothing is named in the directory, and closing gives the space back.
    expect(fs.readdirSync(tmpfs.dir)).toEqual([]);
    arena.close();
    expect(fs.statfsSync(tmpfs.dir).bfree).toBeGreaterThanOrEqual(fs.statfsSync(tmpfs.dir).blocks - 8);
  });
});
