/**
 * ESLint (eslint.config.mjs: typescript-eslint's strictTypeChecked, every rule of it kept)
 * finds nothing in src/ and bench/. It runs as `make lint` does, in a Node
 * process of its own: its config is an ES module, which Jest's CommonJS runtime cannot load.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

const ROOT = path.resolve(__dirname, '../..');

interface LintResult {
  filePath: string;
  messages: Array<{ ruleId: string | null; line: number; message: string }>;
}

async function lintSources(): Promise<LintResult[]> {
  const eslint = path.join(ROOT, 'node_modules/eslint/bin/eslint.js');
  try {
    const { stdout } = await promisify(execFile)(process.execPath, [eslint, '--format', 'json', 'src', 'bench'], { cwd: ROOT, maxBuffer: 64 * 1024 * 1024 });
    return JSON.parse(stdout);
  } catch (err) {
    // Exit code 1 with problems found: the report is still on stdout.
    const stdout = (err as { stdout?: string }).stdout;
    if (stdout?.startsWith('[')) return JSON.parse(stdout);
    throw err;
  }
}

describe('ESLint on src/ and bench/', () => {
  it('reports no problem', async () => {
    const results = await lintSources();
    // A run that read nothing would pass for the wrong reason.
    expect(results.length).toBeGreaterThan(200);
    const problems = results.flatMap((r) => r.messages.map((m) => `${path.relative(ROOT, r.filePath)}:${m.line} ${m.ruleId ?? 'parse'}: ${m.message}`));
    if (problems.length > 0) console.error(`${problems.length} ESLint problem(s):\n${problems.map((p) => `  ${p}`).join('\n')}`);
    expect(problems).toEqual([]);
  }, 300_000);
});
