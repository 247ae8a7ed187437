/**
 * Real answers of the service hold to the served document under a strict validator: ajv in
 * strict mode with the document's own component schemas, as a client that validates what it
 * reads would. A server backup answers `method: null` before the driver started it and
 * `restore_status: null` before any restore, which the document's enums once left out.
 */
import Ajv, { ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { ApiResponse, eventually, startTestService, TestService, waitForStatus } from '../helpers/service';

/** The document's `#/components/schemas/X` as `doc#/definitions/X`, where ajv finds them. */
const DOC = 'cloudplane-openapi';
const rewriteRefs = (node: unknown): unknown => {
  if (Array.isArray(node)) return node.map(rewriteRefs);
  if (!node || typeof node !== 'object') return node;
  return Object.fromEntries(
    Object.entries(node).map(([key, value]) => [
      key,
      key === '$ref' && typeof value === 'string' ? value.replace('#/components/schemas/', `${DOC}#/definitions/`) : rewriteRefs(value),
    ]),
  );
};

describe("the service's answers under a strict validator of the served document", () => {
  let t: TestService;
  let document: any;
  let ajv: Ajv;
  const validators = new Map<string, ValidateFunction>();

  /** What the document's schema for this operation and status says of the answer: [] when it holds. */
  const problemsOf = (method: string, path: string, res: ApiResponse): string[] => {
    const key = `${method} ${path} ${res.status}`;
    if (!validators.has(key)) {
      const schema = document.paths[path]?.[method.toLowerCase()]?.responses?.[String(res.status)]?.content?.['application/json']?.schema;
      if (!schema) return [`${key}: not documented`];
      validators.set(key, ajv.compile(rewriteRefs(schema) as object));
    }
    const validate = validators.get(key)!;
    return validate(res.body) ? [] : [`${key}: ${ajv.errorsText(validate.errors)}`];
  };

  beforeAll(async () => {
    // A backup takes a second or two, so the answers while it is taken are seen.
    t = await startTestService({ CLOUDPLANE_SIM_DELAYS: 'backup=1500' });
    document = (await t.api('GET', '/api/v1/openapi.json', undefined, { key: null })).body;
    // strict: an unknown keyword or format in the document fails the compile, as it would a strict client.
    ajv = addFormats(new Ajv({ strict: true, allErrors: true }));
    ajv.addSchema({ $id: DOC, definitions: rewriteRefs(document.components.schemas) as object });
  });
  afterAll(async () => {
    await t?.stop();
  });

  it("validates a server's backups through their life: taken, listed, restored, missed, deleted", async () => {
    const answers: { method: string; path: string; res: ApiResponse }[] = [];
    const call = async (method: string, path: string, url: string, body?: unknown) => {
      const res = await t.api(method, url, body);
      answers.push({ method, path, res });
      return res;
    };
    const created = await call('POST', '/api/v1/servers', '/api/v1/servers', { name: 'validated', region: 'fra1' });
    const server = created.body.data.id;
    await waitForStatus(t, `/api/v1/servers/${server}`, 'running', 30_000);
    await call('GET', '/api/v1/servers/{id}', `/api/v1/servers/${server}`);

    const backup = (await call('POST', '/api/v1/servers/{id}/backups', `/api/v1/servers/${server}/backups`, { name: 'validated' })).body.data.id;
    const one = `/api/v1/servers/${server}/backups/${backup}`;
    await call('GET', '/api/v1/servers/{id}/backups/{backup_id}', one);
    await waitForStatus(t, one, 'completed', 30_000);
    await call('GET', '/api/v1/servers/{id}/backups/{backup_id}', one);
    await call('GET', '/api/v1/servers/{id}/backups', `/api/v1/servers/${server}/backups`);
    await call('POST', '/api/v1/servers/{id}/restore', `/api/v1/servers/${server}/restore`, { backup_id: backup });
    await eventually(async () => (await t.api('GET', one)).body.data.restore_status === 'succeeded', 30_000);
    await waitForStatus(t, `/api/v1/servers/${server}`, 'running', 30_000);
    await call('GET', '/api/v1/servers/{id}/backups/{backup_id}', one);
    await call('GET', '/api/v1/servers/{id}/backups/{backup_id}', `/api/v1/servers/${server}/backups/bkp_0000000000000000`);
    await call('DELETE', '/api/v1/servers/{id}/backups/{backup_id}', one);

    expect(answers.map(({ res }) => res.status)).toEqual([201, 200, 201, 200, 200, 200, 200, 200, 404, 200]);
    expect(answers.flatMap(({ method, path, res }) => problemsOf(method, path, res))).toEqual([]);
    // Both nulls and both kinds of value were among the answers checked.
    const backups = answers.flatMap(({ res }) => (res.body.data?.id === backup ? [res.body.data] : []));
    expect(new Set(backups.map((b) => b.method))).toEqual(new Set([null, 'simulated']));
    expect(new Set(backups.map((b) => b.restore_status))).toEqual(new Set([null, 'restoring', 'succeeded']));
  });

  it('does refuse an answer outside the document: a method or restore status it does not list', async () => {
    const server = (await t.api('POST', '/api/v1/servers', { name: 'refused', region: 'fra1' })).body.data.id;
    await waitForStatus(t, `/api/v1/servers/${server}`, 'running', 30_000);
    const res = await t.api('POST', `/api/v1/servers/${server}/backups`, {});
    expect(res.status).toBe(201);
    expect(problemsOf('POST', '/api/v1/servers/{id}/backups', res)).toEqual([]);
    for (const wrong of [{ method: 'tape' }, { restore_status: 'maybe' }]) {
      const bent = { ...res, body: { ...res.body, data: { ...res.body.data, ...wrong } } };
      expect(problemsOf('POST', '/api/v1/servers/{id}/backups', bent)).toEqual([expect.stringContaining('must be equal to one of the allowed values')]);
    }
  });
});
