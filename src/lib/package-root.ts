/** Where the installed package is, from src/ (tests) or dist/src/ (built) alike, and its version. */
import fs from 'node:fs';
import path from 'node:path';
import { fieldOf } from './unknown-values';

/** The nearest folder above `from` with a package.json. */
export function packageRoot(from = __dirname): string {
  let dir = from;
  while (!fs.existsSync(path.join(dir, 'package.json'))) {
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`no package.json above ${from}`);
    dir = parent;
  }
  return dir;
}

/** The package's version, as its package.json says. */
export function packageVersion(): string {
  const version = fieldOf(JSON.parse(fs.readFileSync(path.join(packageRoot(), 'package.json'), 'utf8')), 'version');
  return typeof version === 'string' ? version : 'unknown';
}
