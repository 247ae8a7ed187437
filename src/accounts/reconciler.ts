/**
 * The account kinds (Team, User, ApiKey) have nothing to provision, and the API settles
 * its own changes of them; a kubectl edit of their spec (cluster mode) was never
 * observed, so kstatus called them InProgress for ever. This reconciler settles such a
 * change as the API's update does (accounts/settle.ts), with `<family>.updated` by
 * `system` (a watch does not say who edited), after judging the edited spec against the
 * rules the API keeps whatever the caller: a team keeps an active owner and its owner_id
 * names one, e-mails are unique among members, a key acts for a member. The CRD schema
 * has already checked the fields as the API's body schema would. A spec that breaks a
 * rule is observed without its configuration: no `.updated`, status_reason says which
 * rule, and an UpdateRefused Kubernetes Event; it is judged again on every pass until
 * the rule holds (the spec, or the record it clashes with, fixed). Kubernetes has stored
 * it all the same (no admission webhook): whoever may edit these custom resources is a
 * cluster admin, trusted past the API's role checks (docs/kubernetes.md).
 *
 * Not wrapped by adoption: an account made with kubectl is not taken in (a key made so
 * has no hash to authenticate with, a user made so would join a team unasked).
 */
import type { Store } from '../store/types';
import type { ResourceWriter } from '../resources/writer';
import type { AnyFamily, Resource } from '../resources/family';
import type { ReconcileResult, Reconciler } from '../controllers/controller';
import { apiSettleWait } from '../controllers/api-settle-grace';
import { apiKeyFamily, teamFamily, userFamily, ApiKey, Team, User } from '../resources/accounts';
import { settleAccount } from './settle';

const ACTOR = 'system';

/** The rule of the API a stored spec breaks, as a message; null when it breaks none. */
type AccountRule<R extends Resource> = (store: Store, resource: Resource<R['spec'], R['status']>) => Promise<string | null>;

const activeMembers = async (store: Store, team: string) =>
  (await store.list<User['spec'], User['status']>(userFamily.kind, team)).filter((u) => u.status.status === 'active');

const teamRule: AccountRule<Team> = async (store, team) => {
  const owner = (await activeMembers(store, team.meta.team)).find((u) => u.meta.id === team.spec.owner_id);
  return owner?.spec.role === 'owner' ? null : 'owner_id must name an active owner of the team.';
};

const userRule: AccountRule<User> = async (store, user) => {
  if (user.status.status !== 'active') return null;
  const members = await activeMembers(store, user.meta.team);
  if (!members.some((u) => u.spec.role === 'owner')) return 'The team must keep an owner: make another member owner first.';
  const email = user.spec.email.toLowerCase();
  const taken = members.some((u) => u.meta.id !== user.meta.id && u.spec.email.toLowerCase() === email);
  return taken ? `${user.spec.email} is already a member of this team.` : null;
};

const apiKeyRule: AccountRule<ApiKey> = async (store, key) => {
  if (key.status.status !== 'active') return null;
  const member = (await activeMembers(store, key.meta.team)).some((u) => u.meta.id === key.spec.user_id);
  return member ? null : 'user_id is not a member of this team.';
};

export class AccountReconciler<R extends Resource> implements Reconciler {
  readonly kind: string;

  constructor(
    private readonly family: AnyFamily,
    private readonly rule: AccountRule<R>,
    private readonly store: Store,
    private readonly writer: ResourceWriter,
  ) {
    this.kind = family.kind;
  }

  async reconcile(team: string, id: string): Promise<ReconcileResult | undefined> {
    const resource = await this.store.get<R['spec'], R['status']>(this.kind, team, id);
    // Made with kubectl and never taken in (see above), or settled. A refused one is judged
    // again on every pass (a resync, a change): the rule may hold by now (another owner made).
    if (!resource?.status.status) return;
    if (resource.meta.generation === resource.status.observed_generation && !resource.status.status_reason) return;
    const wait = apiSettleWait(resource);
    if (wait > 0) return { requeueAfterMs: wait };
    const refusal = await this.rule(this.store, resource);
    await settleAccount(this.writer, this.family, team, id, ACTOR, { generation: resource.meta.generation, refusal });
  }
}

/** One reconciler per account kind. */
export function accountReconcilers(store: Store, writer: ResourceWriter): Reconciler[] {
  return [
    new AccountReconciler<Team>(teamFamily, teamRule, store, writer),
    new AccountReconciler<User>(userFamily, userRule, store, writer),
    new AccountReconciler<ApiKey>(apiKeyFamily, apiKeyRule, store, writer),
  ];
}
