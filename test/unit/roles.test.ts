/** The one rule every route goes through (accounts/roles.ts), as a table of who may do what. */
import { refusalOf, Requirement } from '../../src/accounts/roles';
import { Role, ROLES } from '../../src/resources/accounts';

const caller = (role: Role, scope: 'read_write' | 'read_only' = 'read_write', installationAdmin = false) => ({ role, scope, installationAdmin });
const allowed = (role: Role, method: string, requires?: Requirement) => refusalOf(caller(role), method, requires) === null;

describe('refusalOf', () => {
  it.each([
    // method, requires, the roles allowed
    ['GET', undefined, ['owner', 'admin', 'member', 'viewer']],
    ['HEAD', undefined, ['owner', 'admin', 'member', 'viewer']],
    ['POST', undefined, ['owner', 'admin', 'member']],
    ['PATCH', undefined, ['owner', 'admin', 'member']],
    ['DELETE', undefined, ['owner', 'admin', 'member']],
    ['PATCH', 'admin', ['owner', 'admin']],
    ['GET', 'admin', ['owner', 'admin']],
    ['DELETE', 'owner', ['owner']],
    // A route cannot lower a write below a member.
    ['POST', 'viewer', ['owner', 'admin', 'member']],
  ] as Array<[string, Requirement | undefined, Role[]]>)('%s with requires=%s is allowed to %j', (method, requires, roles) => {
    expect(ROLES.filter((role) => allowed(role, method, requires))).toEqual(roles);
  });

  it('refuses every write to a read_only key, whatever the role, and lets it read', () => {
    for (const role of ROLES) {
      expect(refusalOf(caller(role, 'read_only'), 'POST')).toMatch(/read_only/);
      expect(refusalOf(caller(role, 'read_only'), 'GET')).toBeNull();
    }
    expect(refusalOf(caller('owner', 'read_only', true), 'POST', 'installation_admin')).toMatch(/read_only/);
  });

  it('judges a read that acts (a listener stream) as a write: a member with a read_write key', () => {
    for (const role of ROLES) expect(refusalOf(caller(role, 'read_only'), 'GET', undefined, true)).toMatch(/read_only/);
    expect(ROLES.filter((role) => refusalOf(caller(role), 'GET', undefined, true) === null)).toEqual(['owner', 'admin', 'member']);
  });

  it('lets only installation admins through an installation_admin route', () => {
    expect(refusalOf(caller('owner', 'read_write', true), 'POST', 'installation_admin')).toBeNull();
    expect(refusalOf(caller('owner', 'read_write', false), 'POST', 'installation_admin')).toMatch(/installation admin/);
    expect(refusalOf(caller('owner', 'read_write', false), 'GET', 'installation_admin')).toMatch(/installation admin/);
  });
});
