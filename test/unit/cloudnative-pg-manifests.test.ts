/**
 * The objects the cloudnative-pg database driver writes, as it builds them (pure): the
 * Cluster, its Secrets and the Databases. The test against the real operator
 * (test/integration/database-cloudnative-pg.test.ts) applies them for real.
 */
import type { DatabaseDesired } from '../../src/drivers/database';
import type { Managed } from '../../src/drivers/types';
import { cnpgObjects, DEFAULT_CNPG_IMAGE, hbaLinesOf } from '../../src/drivers/kubernetes/database-cloudnative-pg';

const owner = { apiVersion: 'cloudplane.dev/v1alpha1', kind: 'Database', name: 'db-aaaaaaaaaaaaaaaaaaaa', uid: '0b6c1f0e-1111-2222-3333-444444444444' };
const AT = { namespace: 'team-bbbbbbbbbbbbbbbbbbbb', name: 'db-aaaaaaaaaaaaaaaaaaaa' };
const SETTINGS = { image: DEFAULT_CNPG_IMAGE, storageClass: 'fast' };
const RECORD = { major: '16', storage_class: 'fast', users: ['old_user', 'app'], absent: ['gone'], db_names: [] };

function resource(overrides: Partial<DatabaseDesired> = {}): Managed<DatabaseDesired> {
  return {
    id: 'db_aaaaaaaaaaaaaaaaaaaa',
    team: 'team_bbbbbbbbbbbbbbbbbbbb',
    generation: 1,
    external: null,
    owner,
    desired: {
      name: 'orders',
      engine: 'pg',
      version: '16',
      region: 'fra1',
      size: 'db-s-2vcpu-4gb',
      num_nodes: 3,
      storage_gb: 20,
      password_version: 1,
      password: 'admin-secret-password',
      users: [{ name: 'app', password_version: 1, password: 'app-secret-password' }],
      db_names: ['inventory'],
      trusted_blocks: ['203.0.113.0/24'],
      ...overrides,
    } as DatabaseDesired,
  };
}

describe('CloudNativePG objects', () => {
  it('makes a Cluster of the desired shape that names its Secrets and holds no password', () => {
    const passwords = { password: 'admin-secret-password', users: { app: 'app-secret-password' } };
    const objects = cnpgObjects(resource(), AT, SETTINGS, RECORD, passwords);
    expect(objects.cluster.metadata).toMatchObject({
      name: AT.name,
      namespace: AT.namespace,
      labels: { 'app.kubernetes.io/managed-by': 'cloudplane', 'cloudplane.dev/id': 'db_aaaaaaaaaaaaaaaaaaaa' },
      ownerReferences: [expect.objectContaining({ kind: 'Database', uid: owner.uid })],
    });
    expect(objects.cluster.spec).toEqual({
      instances: 3,
      imageName: 'ghcr.io/cloudnative-pg/postgresql:16',
      storage: { size: '20Gi', storageClass: 'fast' },
      resources: { requests: { cpu: '2', memory: '4Gi' }, limits: { memory: '4Gi' } },
      bootstrap: { initdb: { database: 'defaultdb', owner: 'dbadmin', secret: { name: `${AT.name}-admin` } } },
      managed: {
        roles: [
          // The administrator too: CloudNativePG then says when it set the password of its Secret.
          { name: 'dbadmin', ensure: 'present', login: true, inherit: true, passwordSecret: { name: `${AT.name}-admin` } },
          { name: 'app', ensure: 'present', login: true, inherit: true, passwordSecret: { name: objects.userSecrets[0].metadata.name } },
          // Removed before (still absent) and just now: CloudNativePG drops both.
          { name: 'gone', ensure: 'absent' },
          { name: 'old_user', ensure: 'absent' },
        ],
      },
      postgresql: { pg_hba: ['host all all 203.0.113.0/24 scram-sha-256', 'host all all all reject'] },
    });
    expect(JSON.stringify(objects.cluster)).not.toContain('secret-password');
    expect(objects.adminSecret).toMatchObject({
      type: 'kubernetes.io/basic-auth',
      metadata: { name: `${AT.name}-admin`, labels: { 'cnpg.io/reload': 'true' } },
    });
    expect(Buffer.from(objects.adminSecret.data!.password, 'base64').toString()).toBe('admin-secret-password');
    expect(Buffer.from(objects.userSecrets[0].data!.username, 'base64').toString()).toBe('app');
    expect(objects.userSecrets[0].metadata.name).toMatch(/^db-aaaaaaaaaaaaaaaaaaaa-user-[0-9a-f]{10}$/);
    expect(objects.databases).toEqual([
      expect.objectContaining({
        kind: 'Database',
        spec: { cluster: { name: AT.name }, name: 'inventory', owner: 'dbadmin', ensure: 'present', databaseReclaimPolicy: 'delete' },
      }),
    ]);
  });

  it('builds the Secrets without data when the passwords are not at hand (for reading back)', () => {
    const objects = cnpgObjects(resource(), AT, SETTINGS, RECORD, null);
    expect(objects.adminSecret.data).toBeUndefined();
    expect(objects.userSecrets[0].data).toBeUndefined();
  });

  it('lets anyone with a password in without trusted sources, and only the trusted ones with them', () => {
    expect(hbaLinesOf(null)).toEqual(['host all all 0.0.0.0/0 scram-sha-256']);
    expect(hbaLinesOf([])).toEqual(['host all all all reject']);
  });
});
