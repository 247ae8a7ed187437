/** The settings records (src/resources/accounts.ts, docs/api.md "Settings"). */
export type Role = 'owner' | 'admin' | 'member' | 'viewer';
export const ROLES: Role[] = ['owner', 'admin', 'member', 'viewer'];

export interface Member {
  id: string;
  name: string;
  email: string;
  role: Role;
  status: 'active' | 'removed';
  team_id: string;
  created_at: string;
  updated_at: string;
}

export interface Team {
  id: string;
  name: string;
  owner_id: string;
  created_at: string;
  updated_at: string;
}

export interface ApiKey {
  id: string;
  name: string;
  prefix: string;
  status: 'active' | 'revoked';
  user_id: string;
  scope: 'read_write' | 'read_only';
  expires_at: string | null;
  last_used_at: string | null;
  created_at: string;
  updated_at: string;
  revoked_at: string | null;
}

export type NewApiKey = ApiKey & { key: string };

/** Owners and admins manage members and their keys. */
export const managesTeam = (role: Role | undefined) => role === 'owner' || role === 'admin';
