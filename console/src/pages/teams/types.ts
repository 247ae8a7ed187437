/** A team as `GET /api/v1/teams` shows it (installation admins only). */
export interface Team {
  id: string;
  name: string;
  owner_id: string;
  created_at: string;
  updated_at: string;
}
