/**
 * The signed-in session (GET /api/v1/session): who the user is, the team they act for, and
 * the CSRF token the API client sends on writes. Held in memory only.
 */
import { api, setCsrfToken } from './api';

export interface Session {
  user: { id: string; name: string; email: string };
  team: { id: string; name: string };
  role: string;
  scope: string;
  /** An admin or owner of the installation's own team: may list and make teams. */
  installation_admin: boolean;
  teams: { id: string; name: string; role: string }[];
  csrf_token?: string;
  expires_at: string;
  idle_expires_at: string;
  via: 'oidc' | 'api_key' | 'bearer';
}

export const session: { current: Session | null } = $state({ current: null });

export async function loadSession(): Promise<Session> {
  const current = await api.get<Session>('/session');
  setCsrfToken(current.csrf_token ?? null);
  session.current = current;
  return current;
}

export async function switchTeam(teamId: string): Promise<void> {
  const current = await api.put<Session>('/session', { team_id: teamId });
  setCsrfToken(current.csrf_token ?? null);
  session.current = current;
}

export async function signOut(): Promise<void> {
  try {
    await api.del('/session');
  } finally {
    setCsrfToken(null);
    session.current = null;
  }
}

/** Whether the session may write (a viewer, or a read_only key's session, may not). */
export const canWrite = () => session.current !== null && session.current.scope !== 'read_only' && session.current.role !== 'viewer';

/** Whether the session may change what admins and owners change (the team's usage limits, its members). */
export const canAdminister = () => canWrite() && (session.current?.role === 'owner' || session.current?.role === 'admin');
