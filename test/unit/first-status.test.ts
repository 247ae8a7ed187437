/**
 * The first status a Kubernetes-store create carries in sealed annotations
 * (src/store/kubernetes/first-status.ts): opened only on the object it was sealed for, as
 * the API server made it then, with the spec the store wrote while at its first
 * generation; an edit (a later generation) keeps it.
 */
import { randomBytes } from 'node:crypto';
import { FIRST_STATUS_ANNOTATION, FIRST_STATUS_SEAL_ANNOTATION, FirstStatusSeal, withoutStaleFirstStatus } from '../../src/store/kubernetes/first-status';
import type { Raw } from '../../src/store/kubernetes/custom-resource';

const SIGNED_AT = '2026-12-01T02:00:00.000Z';
const STATUS = { status: 'creating', observedGeneration: 1, pending_events: [{ id: 'evt_1', type: 'load_balancer.created', actor: 'key_1' }] };

const sealWith = (key = randomBytes(32)) => {
  const seal = new FirstStatusSeal();
  seal.use(key);
  return seal;
};

/** The object as the store sends it, then as the API server answers it (a creationTimestamp of its own clock, to the second). */
function created(seal: FirstStatusSeal, createdAt = '2026-12-01T02:00:01Z'): Raw {
  const body = {
    apiVersion: 'cloudplane.dev/v1alpha1',
    kind: 'LoadBalancer',
    metadata: { name: 'lb-abc', namespace: 'team-xyz', annotations: { 'cloudplane.dev/created-at': SIGNED_AT } as Record<string, string> },
    spec: { name: 'web', region: 'fra1', port: 80, backends: [] },
  };
  Object.assign(body.metadata.annotations, seal.annotationsFor(body, STATUS));
  return structuredClone({ ...body, metadata: { ...body.metadata, creationTimestamp: createdAt, resourceVersion: '7' } });
}

describe('the sealed first status of a create', () => {
  it('opens on the object it was sealed for, as the API server made it', () => {
    const seal = sealWith();
    expect(seal.open(created(seal))).toEqual(STATUS);
  });

  it('holds nothing without a key, and a key of another installation opens nothing', () => {
    const unkeyed = new FirstStatusSeal();
    expect(unkeyed.annotationsFor(created(sealWith()), STATUS)).toEqual({});
    expect(unkeyed.open(created(sealWith()))).toBeUndefined();
    expect(sealWith().open(created(sealWith()))).toBeUndefined();
  });

  it.each([
    ['another name (a copy)', (raw: Raw) => (raw.metadata.name = 'lb-copy')],
    ['another namespace (another team)', (raw: Raw) => (raw.metadata.namespace = 'team-other')],
    ['another kind', (raw: Raw) => (raw.kind = 'Bucket')],
    ['another spec (a kubectl edit, or a replay with a spec of its own)', (raw: Raw) => (raw.spec = { ...raw.spec, region: 'sgp1' })],
    ['a status of its own choosing', (raw: Raw) => (raw.metadata.annotations![FIRST_STATUS_ANNOTATION] = JSON.stringify({ ...STATUS, status: 'running' }))],
    ['another signing time', (raw: Raw) => (raw.metadata.annotations!['cloudplane.dev/created-at'] = '2026-12-01T02:00:05.000Z')],
    [
      'a seal of its own',
      (raw: Raw) =>
        (raw.metadata.annotations![FIRST_STATUS_SEAL_ANNOTATION] =
          `${raw.metadata.annotations![FIRST_STATUS_SEAL_ANNOTATION].split('.')[0]}.${'x'.repeat(43)}`),
    ],
    ['a seal cut short', (raw: Raw) => (raw.metadata.annotations![FIRST_STATUS_SEAL_ANNOTATION] = 'abc')],
    ['a seal with a part more', (raw: Raw) => (raw.metadata.annotations![FIRST_STATUS_SEAL_ANNOTATION] += '.x')],
  ])('is not believed on %s', (_what, change) => {
    const seal = sealWith();
    const raw = created(seal);
    change(raw);
    expect(seal.open(raw)).toBeUndefined();
  });

  it('is not believed on an object made again later (a manifest replayed after its original was deleted)', () => {
    const seal = sealWith();
    expect(seal.open(created(seal, '2026-12-01T02:00:59Z'))).toEqual(STATUS);
    expect(seal.open(created(seal, '2026-12-01T02:01:30Z'))).toBeUndefined();
    expect(seal.open(created(seal, '2026-12-01T01:58:30Z'))).toBeUndefined();
    const undated = created(seal);
    delete undated.metadata.creationTimestamp;
    expect(seal.open(undated)).toBeUndefined();
  });

  it('holds through an edit of the spec (a later generation), which its reconciler judges as any edit; not at the first generation', () => {
    const seal = sealWith();
    const edited = created(seal);
    edited.spec = { ...edited.spec, port: 8080 };
    expect(seal.open(edited)).toBeUndefined();
    edited.metadata.generation = 2;
    expect(seal.open(edited)).toEqual(STATUS);
    // The sealed hash of the spec is bound too: one of the user's own with it does not hold.
    const [, mac] = edited.metadata.annotations![FIRST_STATUS_SEAL_ANNOTATION].split('.');
    edited.metadata.annotations![FIRST_STATUS_SEAL_ANNOTATION] = `${'A'.repeat(43)}.${mac}`;
    expect(seal.open(edited)).toBeUndefined();
  });

  it('is dropped from a cached object once its status is written, and kept until then', () => {
    const seal = sealWith();
    const waiting = created(seal);
    withoutStaleFirstStatus(waiting);
    expect(waiting.metadata.annotations).toHaveProperty([FIRST_STATUS_ANNOTATION]);
    const written = { ...created(seal), status: { status: 'running' } };
    withoutStaleFirstStatus(written);
    expect(written.metadata.annotations).not.toHaveProperty([FIRST_STATUS_ANNOTATION]);
    expect(written.metadata.annotations).not.toHaveProperty([FIRST_STATUS_SEAL_ANNOTATION]);
    expect(written.metadata.annotations).toHaveProperty(['cloudplane.dev/created-at']);
  });
});
