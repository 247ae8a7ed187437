/** Bytes of the files under a directory, its subdirectories included: what a data directory holds. */
import fs from 'node:fs';
import path from 'node:path';

export function directorySize(dir: string): number {
  let total = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    total += entry.isDirectory() ? directorySize(full) : fs.statSync(full).size;
  }
  return total;
}
