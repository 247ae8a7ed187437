/**
 * The layers of src/ (docs/layers.md) hold: dependency-cruiser, run through its JS API
 * (`cruise`) with the rules of .dependency-cruiser.cjs, finds no import that reaches up a
 * layer or across the peer layers, no module outside a layer, and no import cycle. Type-only
 * imports count. `make layers` runs the same rules from the command line.
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';

interface Violation {
  from: string;
  to: string;
  rule: string;
  cycle?: string[];
}

const ROOT = path.resolve(__dirname, '../..');

/** dependency-cruiser is ES modules only, which Jest's CommonJS runtime cannot load: it runs in a Node process of its own. */
function cruiseSrc(): { modules: number; violations: Violation[] } {
  const out = execFileSync(process.execPath, [path.join(ROOT, 'test/helpers/cruise-layers.mjs')], { cwd: ROOT, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  return JSON.parse(out);
}

const describeViolation = (v: Violation): string =>
  `${v.from} → ${v.to} (${v.rule})${v.cycle ? `: ${[v.to, ...v.cycle.filter((m) => m !== v.to)].join(' → ')} → ${v.to}` : ''}`;

describe('layers of src/', () => {
  it('has no upward import, no import between peer layers and no import cycle', () => {
    const { modules, violations } = cruiseSrc();
    // A cruise that found nothing to read would pass for the wrong reason.
    expect(modules).toBeGreaterThan(200);
    const lines = violations.map(describeViolation);
    if (lines.length > 0) {
      // Each one, printed whole: from → to, and the rule it breaks (docs/layers.md says how to fix).
      console.error(`${lines.length} layer violation(s):\n${lines.map((l) => `  ${l}`).join('\n')}`);
    }
    expect(lines).toEqual([]);
  }, 120_000);
});
