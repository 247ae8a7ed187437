import fs from 'node:fs';
import path from 'node:path';

const REPO = path.resolve(__dirname, '../..');
const guide = fs.readFileSync(path.join(REPO, 'docs/webhook-receivers.md'), 'utf8');

/** Every `<!-- verbatim: <file> -->` block of the guide, with the code that follows it. */
const blocks = [...guide.matchAll(/<!-- verbatim: (\S+) -->\n```\w*\n([\s\S]*?)```\n/g)].map((m) => [m[1], m[2]] as const);

describe('docs/webhook-receivers.md', () => {
  it('shows every receiver that test/integration/receivers.test.ts runs', () => {
    const receivers = ['python/receiver.py', 'python/requirements.txt', 'go/main.go', 'go/go.mod', 'node/receiver.js'].map((f) => `test/receivers/${f}`);
    expect(blocks.map(([file]) => file).sort()).toEqual(receivers.sort());
  });

  it.each(blocks)('shows %s byte for byte', (file, code) => {
    expect(code).toBe(fs.readFileSync(path.join(REPO, file), 'utf8'));
  });
});
