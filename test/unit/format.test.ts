/**
 * Every source file is as Prettier writes it (.prettierrc.json; .prettierignore names what
 * is left to its makers: generated CRDs, the chart, prose). It runs as `make lint` does,
 * in a Node process of its own; `make format` rewrites what it names.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

const ROOT = path.resolve(__dirname, '../..');

const prettier = path.join(ROOT, 'node_modules/prettier/bin/prettier.cjs');

/** Prettier's output and exit code: 0 all well, 1 files differ (listed), 2 Prettier itself failed. */
function prettierRun(args: string[]): Promise<{ stdout: string; code: number }> {
  return promisify(execFile)(process.execPath, [prettier, ...args], { cwd: ROOT, maxBuffer: 64 * 1024 * 1024 }).then(
    ({ stdout }) => ({ stdout, code: 0 }),
    (err: { stdout?: string; code?: number }) => ({ stdout: err.stdout ?? '', code: typeof err.code === 'number' ? err.code : -1 }),
  );
}

describe('Prettier', () => {
  it('finds every source file formatted', async () => {
    // src/ is checked, as TypeScript: a run that checked nothing would pass for the wrong reason.
    const info = JSON.parse((await prettierRun(['--file-info', 'src/main.ts'])).stdout) as { ignored: boolean; inferredParser: string | null };
    expect(info).toEqual({ ignored: false, inferredParser: 'typescript' });
    const listed = await prettierRun(['--list-different', '.']);
    expect([0, 1]).toContain(listed.code);
    const different = listed.stdout.split('\n').filter(Boolean);
    if (different.length > 0) console.error(`Not formatted (make format):\n${different.map((f) => `  ${f}`).join('\n')}`);
    expect(different).toEqual([]);
  }, 300_000);
});
