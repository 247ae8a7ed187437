/**
 * The reference pages name everything they are the reference of: docs/cli.md every
 * command, README.md's Configuration (and docs/cli.md, for the CLI's own) every
 * CLOUDPLANE_* variable the code reads, docs/kubernetes.md every CRD in crds/. Each list
 * is read from the code or the files, so a new command, variable or kind fails here until
 * its page says what it is; a failure lists the names missing.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { parse } from 'yaml';
import { buildProgram } from '../../src/cli/program';
import { settingOf } from '../../src/drivers/registry';
import { DRIVER_FAMILIES } from '../../src/families';

const REPO = path.resolve(__dirname, '../..');
const read = (file: string) => fs.readFileSync(path.join(REPO, file), 'utf8');
const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The part of a Markdown page under `heading`, up to the next heading of the same level. */
function section(page: string, heading: string): string {
  const level = heading.match(/^#+/)![0];
  const start = page.indexOf(`${heading}\n`);
  if (start < 0) throw new Error(`no section "${heading}"`);
  const next = page.slice(start + heading.length).search(new RegExp(`\\n${level} `));
  return next < 0 ? page.slice(start) : page.slice(start, start + heading.length + next);
}

/** Every .ts file under a directory of the repository. */
function sources(dir: string): string[] {
  return fs.readdirSync(path.join(REPO, dir), { withFileTypes: true }).flatMap((entry) => {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) return sources(file);
    return entry.name.endsWith('.ts') ? [file] : [];
  });
}

describe('docs/cli.md', () => {
  const page = read('docs/cli.md');
  /** A command is mentioned as `path` or `path ARGS...` in code. */
  const mentioned = (command: string) => new RegExp(`\`${escape(command)}[\` ]`).test(page);

  /** The leaf commands of the commander tree, as typed: `servers backups list`. */
  function leaves(command: Command, prefix: string[] = []): string[] {
    return command.commands.flatMap((child) => {
      const words = [...prefix, child.name()];
      return child.commands.length === 0 ? [words.join(' ')] : leaves(child, words);
    });
  }
  const apiCommands = leaves(buildProgram());

  /** `serve`, `team create`, `vpn-agent`: dispatched by src/main.ts before the commander tree. */
  const serviceCommands = [
    ...new Set(
      [...read('src/main.ts').matchAll(/command === '([\w-]+)'(?: && rest\[0\] === '([\w-]+)')?/g)].map((m) => [m[1], m[2]].filter(Boolean).join(' ')),
    ),
  ];

  it('finds the commands to look for', () => {
    expect(apiCommands).toEqual(expect.arrayContaining(['auth init', 'servers backups list', 'jobs runs get', 'listen', 'completion']));
    expect(apiCommands.length).toBeGreaterThan(90);
    expect(serviceCommands.sort()).toEqual(['serve', 'state', 'team create', 'vpn-agent']);
  });

  it('mentions every command of the commander tree', () => {
    expect(apiCommands.filter((command) => !mentioned(command))).toEqual([]);
  });

  it('mentions every command src/main.ts runs itself', () => {
    expect(serviceCommands.filter((command) => !mentioned(command))).toEqual([]);
  });
});

describe('CLOUDPLANE_* variables', () => {
  /**
   * The variables each file reads: `env.CLOUDPLANE_X`, `env['CLOUDPLANE_X']`, and a
   * literal 'CLOUDPLANE_X' handed to a reader (config.ts's `int(env, 'CLOUDPLANE_X', ...)`).
   * A literal after `||` or `??` is a default value, not a name (the NATS stream
   * `CLOUDPLANE_EVENTS`); one ending in `_` is a prefix (`CLOUDPLANE_DRIVER_<FAMILY>`).
   */
  const NAME = /(?:env\.|env\[['"`])(CLOUDPLANE_[A-Z0-9_]+)|(?<!(?:\|\||\?\?)\s*)['"`](CLOUDPLANE_[A-Z0-9_]+)['"`]/g;
  const readBy = new Map<string, Set<string>>();
  for (const file of sources('src')) {
    for (const m of read(file).matchAll(NAME)) {
      const name = m[1] ?? m[2];
      const names = name.endsWith('_') ? [] : [name];
      if (name === 'CLOUDPLANE_DRIVER_') names.push(...DRIVER_FAMILIES.map(settingOf));
      else if (name.endsWith('_')) throw new Error(`${file} reads variables named ${name}<...>: say here which names those are`);
      for (const n of names) readBy.set(n, new Set([...(readBy.get(n) ?? []), file]));
    }
  }
  const isCli = (name: string) => [...readBy.get(name)!].every((file) => file.startsWith(`src${path.sep}cli${path.sep}`));
  const cliVariables = [...readBy.keys()].filter(isCli).sort();
  const serviceVariables = [...readBy.keys()].filter((name) => !isCli(name)).sort();
  const mentionedIn = (text: string) => (name: string) => new RegExp(`(?<![A-Z0-9_])${name}(?![A-Z0-9_])`).test(text);

  it('finds the variables to look for', () => {
    expect(serviceVariables).toEqual(
      expect.arrayContaining(['CLOUDPLANE_PORT', 'CLOUDPLANE_STORE', 'CLOUDPLANE_NATS_URL', 'CLOUDPLANE_DRIVER_BACKUP', 'CLOUDPLANE_WIREGUARD_GO']),
    );
    expect(serviceVariables.length).toBeGreaterThan(90);
    expect(serviceVariables).not.toContain('CLOUDPLANE_EVENTS');
    expect(cliVariables).toEqual(['CLOUDPLANE_API_KEY', 'CLOUDPLANE_API_URL', 'CLOUDPLANE_CONFIG']);
  });

  it("README.md's Configuration names every variable the service and the VPN agent read", () => {
    const configuration = section(read('README.md'), '## Configuration');
    expect(serviceVariables.filter((name) => !mentionedIn(configuration)(name))).toEqual([]);
  });

  it('docs/cli.md names every variable the CLI reads', () => {
    const page = read('docs/cli.md');
    expect(cliVariables.filter((name) => !mentionedIn(page)(name))).toEqual([]);
  });
});

describe('docs/kubernetes.md', () => {
  const page = read('docs/kubernetes.md');
  const crds = fs
    .readdirSync(path.join(REPO, 'crds'))
    .filter((file) => file.endsWith('.yaml'))
    .map((file) => ({ file, names: parse(read(`crds/${file}`)).spec.names as { kind: string; plural: string } }));

  it('finds the CRDs to look for', () => {
    expect(crds.length).toBeGreaterThan(10);
    expect(crds.map((crd) => crd.names.kind)).toEqual(expect.arrayContaining(['LoadBalancer', 'WebhookSubscription']));
  });

  it('names the kind and the plural of every CRD in crds/', () => {
    const missing = crds.flatMap(({ file, names }) => [
      ...(new RegExp(`\`${names.kind}\``).test(page) ? [] : [`${file}: kind ${names.kind}`]),
      ...(new RegExp(`\`${names.plural}(\\.cloudplane\\.dev)?\``).test(page) ? [] : [`${file}: plural ${names.plural}`]),
    ]);
    expect(missing).toEqual([]);
  });
});
