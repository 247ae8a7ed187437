/**
 * Who may do what: the four roles of a team, the two scopes of a key, and the one rule
 * that turns a route into what it requires. The authentication hook applies the rule to
 * every route (plugins/authentication.ts), so a route cannot forget it: a route that reads
 * (GET, HEAD) needs a viewer, any other needs a member and a read_write key, and a route
 * that needs more says so in its config (`requires`, or `actsAsWrite` for a read by its
 * method that acts: a listener's stream takes the listener over and receives its signed
 * deliveries, which only who may make the listener may do). Rules that depend on the record
 * a request touches (an admin may not manage an owner) are in members.ts. The roles and
 * scopes themselves are fields of the member and key records (resources/accounts.ts).
 */
import type { KeyScope, Role } from '../resources/accounts';

/**
 * What a route may ask of its caller beyond what its method implies: a role at least
 * this high, or an installation admin (an owner or admin of the bootstrap team).
 */
export type Requirement = Role | 'installation_admin';

const RANK: Record<Role, number> = { viewer: 0, member: 1, admin: 2, owner: 3 };

export const atLeast = (role: Role, minimum: Role): boolean => RANK[role] >= RANK[minimum];

const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
export const isRead = (method: string): boolean => READ_METHODS.has(method.toUpperCase());

export interface Caller {
  role: Role;
  scope: KeyScope;
  installationAdmin: boolean;
}

/**
 * Why the caller may not use a route answering `method` with `requires`, or null when it
 * may. A write never needs less than a member, whatever the route says; `actsAsWrite`
 * judges a read by its method as a write.
 */
export function refusalOf(caller: Caller, method: string, requires?: Requirement, actsAsWrite = false): string | null {
  const read = isRead(method) && !actsAsWrite;
  if (!read && caller.scope === 'read_only') return 'This API key is read_only; use a read_write key to change anything.';
  if (requires === 'installation_admin') {
    return caller.installationAdmin ? null : "Only an installation admin (an owner or admin of the installation's first team) may do this.";
  }
  const minimum: Role = requires && atLeast(requires, read ? 'viewer' : 'member') ? requires : read ? 'viewer' : 'member';
  return atLeast(caller.role, minimum)
    ? null
    : `Your role (${caller.role}) may not do this; it needs ${minimum === 'member' ? 'a member' : `an ${minimum}`} or above.`;
}

/** Who is calling, once authenticated: the key's team and user, the user's role, the key's scope. */
export interface Principal extends Caller {
  team: string;
  user: string;
  /** The API key's id; for a console session, the user's id. It is the actor of what the request changes, and its rate-limit bucket. */
  key: string;
}
