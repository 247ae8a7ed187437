/** What every benchmark records beside its figures, and where it writes them. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** bench/results of the repository, from bench/ (ts-node) or dist/bench/ (built). */
const RESULTS_DIR = path.resolve(__dirname, __dirname.includes(`${path.sep}dist${path.sep}`) ? '../..' : '..', 'bench', 'results');

/** The machine a run happened on, so figures are never read without it. */
export function machine() {
  const cpus = os.cpus();
  return {
    cpu_model: cpus[0]?.model ?? 'unknown',
    cpu_count: cpus.length,
    total_memory_gb: Math.round((os.totalmem() / 1024 ** 3) * 10) / 10,
    node: process.version,
    platform: `${os.type()} ${os.release()} ${os.arch()}`,
  };
}

/** Writes bench/results/<name>-<timestamp>.json and <name>-latest.md; returns their paths. */
export function writeResults(name: string, startedAt: Date, report: unknown, markdown: string): { jsonFile: string; markdownFile: string } {
  fs.mkdirSync(RESULTS_DIR, { recursive: true });
  const stamp = startedAt.toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z');
  const jsonFile = path.join(RESULTS_DIR, `${name}-${stamp}.json`);
  const markdownFile = path.join(RESULTS_DIR, `${name}-latest.md`);
  fs.writeFileSync(jsonFile, `${JSON.stringify(report, null, 2)}\n`);
  fs.writeFileSync(markdownFile, markdown);
  return { jsonFile: path.relative(process.cwd(), jsonFile), markdownFile: path.relative(process.cwd(), markdownFile) };
}
