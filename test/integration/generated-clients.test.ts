/**
 * Clients generated from the served OpenAPI document, as a user would make them, drive a
 * short scenario against the service: openapi-typescript (types checked by tsc, calls by
 * openapi-fetch), openapi-python-client and openapi-generator's Go client (`-g go`, built
 * by `go build`). The generators must also find nothing in the document they cannot model,
 * and name one class per record rather than one per answer.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startTestService, TestService } from '../helpers/service';

const ROOT = path.resolve(__dirname, '../..');
const TS_DIR = path.join(ROOT, 'test/clients/typescript');
const GENERATED_TS = path.join(TS_DIR, 'generated');
const PY_SCENARIO = path.join(ROOT, 'test/clients/python/scenario.py');
const GO_DIR = path.join(ROOT, 'test/clients/go');
const GENERATED_GO = path.join(GO_DIR, 'generated');
/** What test/clients/typescript/scenario.ts returns (its own type needs the generated one). */
interface ScenarioResult {
  created: { id: string; name: string; region: string; algorithm: string; status: string };
  location: string | null;
  algorithm: string;
  listedIds: string[];
  missingCode: string | undefined;
  deletedStatus: string | undefined;
}

/**
 * A command's exit status and output. Never a synchronous call: the service runs in this
 * process, and a blocked event loop would have it shed the scenario's requests as overload.
 */
function run(
  command: string,
  args: string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<{ status: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      command,
      args,
      { cwd: options.cwd ?? ROOT, env: options.env ?? process.env, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
      (err, stdout, stderr) => {
        resolve({ status: err ? Number((err as { code?: unknown }).code ?? 1) || 1 : 0, stdout, stderr });
      },
    );
  });
}
const node = (script: string, args: string[]) => run(process.execPath, [path.join(ROOT, 'node_modules', script), ...args]);

describe('clients generated from /api/v1/openapi.json', () => {
  let t: TestService;
  let work: string;
  let documentFile: string;

  beforeAll(async () => {
    t = await startTestService();
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-clients-'));
    documentFile = path.join(work, 'openapi.json');
    fs.writeFileSync(documentFile, JSON.stringify((await t.api('GET', '/api/v1/openapi.json', undefined, { key: null })).body));
  });

  afterAll(async () => {
    await t?.stop();
    if (work) fs.rmSync(work, { recursive: true, force: true });
  });

  describe('openapi-typescript with openapi-fetch', () => {
    beforeAll(async () => {
      fs.rmSync(GENERATED_TS, { recursive: true, force: true });
      const generated = await node('openapi-typescript/bin/cli.js', [documentFile, '--output', path.join(GENERATED_TS, 'api.d.ts')]);
      expect({ status: generated.status, stderr: generated.stderr.replace(/^.*✨.*$/gm, '').trim() }).toEqual({ status: 0, stderr: '' });
    }, 120_000);

    it('type-checks the scenario against the generated types, which do refuse a wrong call', async () => {
      const checked = await node('typescript/bin/tsc', ['-p', path.join(TS_DIR, 'tsconfig.json')]);
      expect({ status: checked.status, out: checked.stdout }).toEqual({ status: 0, out: '' });

      // The same client with a body lacking `region`, a query the list does not take, and an
      // answer read wrong. (A body's extra field is not refused: openapi-fetch's inference loses
      // TypeScript's excess-property check; the service answers it 422.)
      const wrong = path.join(GENERATED_TS, 'wrong.ts');
      fs.writeFileSync(
        wrong,
        [
          "import createClient from 'openapi-fetch';",
          "import type { paths } from './api';",
          "const client = createClient<paths, 'application/json'>({});",
          "export const a = client.POST('/api/v1/load-balancers', { body: { name: 'x' } });",
          "export const b = client.GET('/api/v1/load-balancers', { params: { query: { colour: 'red' } } });",
          "export const c = client.GET('/api/v1/servers/{id}', { params: { path: { id: 'x' } } }).then((r) => r.data?.data.algorithm);",
        ].join('\n'),
      );
      const refused = await node('typescript/bin/tsc', ['--noEmit', '--strict', '--esModuleInterop', '--skipLibCheck', '--types', 'node', wrong]);
      const lines = refused.stdout.split('\n').filter((line) => line.includes('error TS'));
      expect(lines.map((line) => /wrong\.ts\((\d+),/.exec(line)?.[1])).toEqual(['4', '5', '6']);
      // Two runs of tsc: half a minute on an idle 2-core machine, more on a busy one.
    }, 300_000);

    it('creates, reconfigures, lists, misses and deletes a load balancer', async () => {
      // By a computed path: the project's tsc must not follow it into types not generated yet.
      const { runScenario } = (await import(path.join(TS_DIR, 'scenario'))) as { runScenario: (url: string, key: string) => Promise<ScenarioResult> };
      const result = await runScenario(t.url, t.key);
      expect(result.created).toMatchObject({ name: 'generated-ts', region: 'fra1', algorithm: 'least_connections', status: 'creating' });
      expect(result.location).toBe(`/api/v1/load-balancers/${result.created.id}`);
      expect(result.algorithm).toBe('ip_hash');
      expect(result.listedIds).toContain(result.created.id);
      expect(result.missingCode).toBe('load_balancer_not_found');
      expect(['deleting', 'deleted']).toContain(result.deletedStatus);
    });
  });

  describe('openapi-python-client', () => {
    let bin: string;
    let generation: string;

    beforeAll(async () => {
      const ensured = await run(path.join(ROOT, 'scripts/ensure-client-generators.sh'), []);
      expect({ status: ensured.status, stderr: ensured.status ? ensured.stderr : '' }).toEqual({ status: 0, stderr: '' });
      bin = ensured.stdout.trim().split('\n').pop()!;
      // ruff, in the same venv, formats the generated code as the generator expects.
      const env = { ...process.env, PATH: `${bin}:${process.env.PATH}` };
      const generated = await run(
        path.join(bin, 'openapi-python-client'),
        ['generate', '--path', documentFile, '--meta', 'none', '--output-path', path.join(work, 'cloudplane_client')],
        { cwd: work, env },
      );
      expect(generated.status).toBe(0);
      generation = generated.stdout + generated.stderr;
    }, 300_000);

    it('generates without a warning, one model per record and none per inlined answer', () => {
      expect(generation).not.toMatch(/warning|error|unable|failure/i);
      const models = fs.readdirSync(path.join(work, 'cloudplane_client/models')).filter((file) => file.endsWith('.py') && file !== '__init__.py');
      expect(models).toEqual(
        expect.arrayContaining(['load_balancer.py', 'load_balancer_envelope.py', 'load_balancer_list.py', 'error.py', 'error_envelope.py', 'vpn_gateway.py']),
      );
      expect(models.filter((file) => /_response_\d{3}/.test(file))).toEqual([]);
      // 2,337 classes when every answer was inlined (about 140 a family); one per record,
      // envelope, body and enum now, about 18 a family: well under 25 a family.
      const families = (JSON.parse(fs.readFileSync(documentFile, 'utf8')) as { 'x-cloudplane-families': unknown[] })['x-cloudplane-families'].length;
      expect(models.length).toBeLessThan(families * 25);
    });

    it('creates, reconfigures, lists, misses and deletes a load balancer', async () => {
      const scenario = await run(path.join(bin, 'python'), [PY_SCENARIO, t.url, t.key], { env: { ...process.env, PYTHONPATH: work } });
      expect({ status: scenario.status, stderr: scenario.stderr }).toEqual({ status: 0, stderr: '' });
      const result = JSON.parse(scenario.stdout.trim().split('\n').pop()!);
      expect(result.created).toMatchObject({ name: 'generated-py', status: 'creating', algorithm: 'round_robin' });
      expect(result.status_code).toBe(201);
      expect(result.location).toBe(`/api/v1/load-balancers/${result.created.id}`);
      expect(result.algorithm).toBe('ip_hash');
      expect(result.listed_ids).toContain(result.created.id);
      expect(result.missing_code).toBe('load_balancer_not_found');
      expect(['deleting', 'deleted']).toContain(result.deleted_status);
    });
  });
  describe("openapi-generator's Go client", () => {
    let generation: string;
    // The machine's Go, never a toolchain it would download; the client needs nothing but the
    // standard library, so go.mod and go.sum are only read (-mod=readonly).
    const goEnv = { ...process.env, GOTOOLCHAIN: 'local', GOFLAGS: '-mod=readonly' };

    beforeAll(async () => {
      const ensured = await run(path.join(ROOT, 'scripts/ensure-openapi-generator.sh'), []);
      expect({ status: ensured.status, stderr: ensured.status ? ensured.stderr : '' }).toEqual({ status: 0, stderr: '' });
      const tools = Object.fromEntries(
        ensured.stdout
          .trim()
          .split('\n')
          .map((line) => line.split(' ', 2) as [string, string]),
      );
      fs.rmSync(GENERATED_GO, { recursive: true, force: true });
      const generated = await run(tools.java, [
        '-jar',
        tools.jar,
        'generate',
        '-g',
        'go',
        '-i',
        documentFile,
        '-o',
        GENERATED_GO,
        '--package-name',
        'cloudplane',
        // The module test/clients/go/go.mod replaces with this directory.
        '--git-host',
        'cloudplane.dev',
        '--git-user-id',
        'cloudplane',
        '--git-repo-id',
        'go-client',
        // The client alone: its own tests and Markdown docs are not what is checked here.
        '--global-property',
        'apiTests=false,modelTests=false,apiDocs=false,modelDocs=false',
      ]);
      expect(generated.status).toBe(0);
      generation = generated.stdout + generated.stderr;
    }, 300_000);

    it('generates warning only of Go keywords it renames, one model per record', () => {
      const warnings = generation.split('\n').filter((line) => /\b(WARN|ERROR)\b/.test(line) && !/\(reserved word\) cannot be used/.test(line));
      expect(warnings).toEqual([]);
      const models = fs.readdirSync(GENERATED_GO).filter((file) => file.startsWith('model_'));
      expect(models).toEqual(
        expect.arrayContaining(['model_load_balancer.go', 'model_load_balancer_envelope.go', 'model_error_envelope.go', 'model_api_key_created.go']),
      );
    });

    it('compiles: no schema clashes with the constructors and wrappers it writes (NewApiKey, NullableTeam, ...)', async () => {
      const built = await run('go', ['build', './...'], { cwd: GENERATED_GO, env: goEnv });
      expect({ status: built.status, stderr: built.stderr }).toEqual({ status: 0, stderr: '' });
      // Byte counters are int64: test/clients/go/main.go does not compile against an int32 one.
      const vetted = await run('go', ['vet', '.'], { cwd: GO_DIR, env: goEnv });
      expect({ status: vetted.status, stderr: vetted.stderr }).toEqual({ status: 0, stderr: '' });
    }, 300_000);

    it('creates, gets, lists, misses and deletes a load balancer', async () => {
      const scenario = await run('go', ['run', '.', t.url, t.key], { cwd: GO_DIR, env: goEnv });
      expect({ status: scenario.status, stderr: scenario.stderr }).toEqual({ status: 0, stderr: '' });
      const result = JSON.parse(scenario.stdout.trim().split('\n').pop()!);
      expect(result.created).toMatchObject({ name: 'generated-go', region: 'fra1', algorithm: 'least_connections', status: 'creating' });
      expect(result.status_code).toBe(201);
      expect(result.location).toBe(`/api/v1/load-balancers/${result.created.id}`);
      expect(result.got_name).toBe('generated-go');
      expect(result.listed_ids).toContain(result.created.id);
      expect({ status: result.missing_status, code: result.missing_code }).toEqual({ status: 404, code: 'load_balancer_not_found' });
      expect(['deleting', 'deleted']).toContain(result.deleted_status);
    }, 120_000);
  });
});
