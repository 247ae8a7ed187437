/**
 * The OpenAPI document publishes every family's presentation (`x-cloudplane-families`,
 * docs/api.md), in the registry's order, as the family definitions declare it: the web
 * console builds its pages from it over HTTP.
 */
import { Value } from '@sinclair/typebox/value';
import { families } from '../../src/resources/registry';
import { presentationOf } from '../../src/resources/presentation-of';
import { PublishedFamilySchema, type PublishedFamily } from '../../src/resources/presentation';
import { startTestService, TestService } from '../helpers/service';

describe('x-cloudplane-families in GET /api/v1/openapi.json', () => {
  let svc: TestService;
  let published: unknown;

  beforeAll(async () => {
    svc = await startTestService();
    const response = await svc.api('GET', '/api/v1/openapi.json', undefined, { key: null });
    expect(response.status).toBe(200);
    published = response.body['x-cloudplane-families'];
  });
  afterAll(async () => {
    await svc.stop();
  });

  const isPublishedFamily = (entry: unknown): entry is PublishedFamily => Value.Check(PublishedFamilySchema, entry);
  const publishedList = (): PublishedFamily[] => (Array.isArray(published) ? published : []).filter(isPublishedFamily);

  it('lists every family of the registry once, in its order, each in the published shape', () => {
    expect(Array.isArray(published)).toBe(true);
    const entries: unknown[] = Array.isArray(published) ? published : [];
    expect(entries.map((entry) => Value.Check(PublishedFamilySchema, entry))).toEqual(families.map(() => true));
    expect(publishedList().map((f) => f.name)).toEqual(families.map((f) => f.name));
  });

  it('carries each family as its definition declares it: names, deletability and presentation', () => {
    expect(published).toEqual(
      families.map((f) => ({ name: f.name, path: f.path, deletable: f.deletable !== false, idPrefix: f.idPrefix, ...presentationOf(f) })),
    );
  });

  it("names the console's families in the order of its navigation, with what their pages show", () => {
    const shown = publishedList().filter((f) => f.console);
    expect(shown.map((f) => [f.path, f.title, f.singular])).toEqual([
      ['load-balancers', 'Load balancers', 'load balancer'],
      ['vpn-gateways', 'VPN gateways', 'VPN gateway'],
      ['servers', 'Servers', 'server'],
      ['object-storage', 'Buckets', 'bucket'],
      ['file-storage', 'File shares', 'file share'],
      ['databases', 'Databases', 'database'],
      ['kubernetes-clusters', 'Kubernetes clusters', 'Kubernetes cluster'],
      ['jobs', 'Jobs', 'job'],
      ['alert-policies', 'Alert policies', 'alert policy'],
      ['incidents', 'Incidents', 'incident'],
    ]);
    const servers = shown.find((f) => f.path === 'servers');
    expect(servers?.actions.map((a) => [a.name, a.allowedIn])).toEqual([
      ['stop', ['running']],
      ['start', ['stopped']],
      ['reboot', ['running']],
    ]);
    expect(shown.find((f) => f.path === 'object-storage')?.deleteOptions).toEqual([{ query: 'force', label: 'Also delete the objects it holds' }]);
    expect(shown.find((f) => f.path === 'jobs')?.deletable).toBe(false);
    // Incidents are read and moved on by their two actions; they are history, never deleted.
    const incidents = shown.find((f) => f.path === 'incidents');
    expect(incidents?.actions.map((a) => [a.name, a.allowedIn])).toEqual([
      ['acknowledge', ['open']],
      ['resolve', ['open', 'acknowledged']],
    ]);
    expect(incidents?.deletable).toBe(false);
  });
});
