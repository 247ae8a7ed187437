/**
 * The account kinds (Team, User, ApiKey) edited with kubectl, on a real kube-apiserver:
 * nothing provisions them, so only the account reconciler observes the new generation.
 * kstatus (the real library, scripts/build-kstatus.sh) must call each InProgress as the
 * edit lands and Current once settled, and the audit log must show `<family>.updated`.
 * An edit the API would refuse is reported, and an API PATCH still names its caller.
 */
import { execFileSync } from 'node:child_process';
import { CoreV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { clusterEnv, clusterFor, kubeConfigOf, stopClusters } from '../helpers/cluster';
import { builtTool } from '../helpers/kube-apiserver';
import { eventually, FAST_ENV, startTestService, tempDataDir, TestService } from '../helpers/service';
import { apiKeyFamily, teamFamily, userFamily } from '../../src/resources/accounts';
import { namespaceOfTeam } from '../../src/store/kubernetes/names';
import type { AnyFamily } from '../../src/resources/family';

jest.setTimeout(240_000);

const GROUP = 'cloudplane.dev';
const VERSION = 'v1alpha1';
const SYSTEM_NAMESPACE = 'cloudplane-system';
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

function kstatus(object: object): { status: string; message: string } {
  const binary = builtTool('kstatus', 'build-kstatus.sh');
  const out = execFileSync(binary, { input: JSON.stringify(object) + '\n', encoding: 'utf8' });
  return JSON.parse(out.trim());
}

describe('kstatus of the account kinds after a kubectl edit', () => {
  let t: TestService;
  let custom: CustomObjectsApi;
  let core: CoreV1Api;
  let namespace: string;

  /**
   * The first custom resource of a kind, once its status is written: an API create's first
   * status rides sealed in annotations until a status write, the store's own at most a few
   * seconds on (docs/kubernetes.md), and kstatus reads only the status.
   */
  const firstCr = (family: AnyFamily) =>
    eventually(
      async () => {
        const listed = (await custom.listNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: family.plural })) as { items: any[] };
        return listed.items[0]?.status ? listed.items[0] : null;
      },
      30_000,
      200,
    );
  const readCr = async (family: AnyFamily, name: string) =>
    (await custom.getNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: family.plural, name })) as any;
  const patchSpec = async (family: AnyFamily, name: string, spec: object) =>
    (await custom.patchNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: family.plural, name, body: { spec } }, mergePatch)) as any;
  const idOf = (cr: any) => cr.metadata.labels[`${GROUP}/id`] as string;
  const settled = (family: AnyFamily, name: string, generation: number) =>
    eventually(
      async () => {
        const cr = await readCr(family, name);
        return cr.status.observedGeneration >= generation ? cr : null;
      },
      60_000,
      200,
    );
  const updates = async (family: AnyFamily, id: string) =>
    (await t.api('GET', `/api/v1/audit-log?type=${family.name}.updated&resource_id=${id}`)).body.data as any[];

  beforeAll(async () => {
    const dataDir = tempDataDir();
    const env = await clusterEnv(dataDir);
    const kubeConfig = kubeConfigOf(await clusterFor(dataDir));
    custom = kubeConfig.makeApiClient(CustomObjectsApi);
    core = kubeConfig.makeApiClient(CoreV1Api);
    // A short resync: a refused edit is judged again on every pass, which the last case waits for.
    t = await startTestService({ ...FAST_ENV, ...env, CLOUDPLANE_RESYNC_SECONDS: '2' }, dataDir);
    namespace = namespaceOfTeam(t.teamId, SYSTEM_NAMESPACE);
  });

  afterAll(async () => {
    await t?.stop();
    await stopClusters();
  });

  it.each([
    ['Team', teamFamily],
    ['User', userFamily],
    ['ApiKey', apiKeyFamily],
  ])("goes InProgress then Current when a %s's name is edited, with the .updated event", async (_kind, family) => {
    const cr = await firstCr(family);
    const id = idOf(cr);
    expect(kstatus(cr).status).toBe('Current');
    const name = `edited-${family.name}`;
    const edited = await patchSpec(family, cr.metadata.name, { name });
    // The edit as the apiserver stored it: a generation nothing has observed yet.
    expect(edited.metadata.generation).toBeGreaterThan(edited.status.observedGeneration);
    expect(kstatus(edited).status).toBe('InProgress');

    const after = await settled(family, cr.metadata.name, edited.metadata.generation);
    expect(after.status.observedGeneration).toBe(after.metadata.generation);
    expect(kstatus(after).status).toBe('Current');
    const events = await eventually(
      async () => {
        const found = await updates(family, id);
        return found.some((e) => e.data.name === name) ? found : null;
      },
      30_000,
      200,
    );
    expect(events.find((e) => e.data.name === name)).toMatchObject({ type: `${family.name}.updated`, actor: 'system', team_id: t.teamId });
  });

  it('names the caller, not system, as the actor of an API PATCH', async () => {
    const key = await firstCr(apiKeyFamily);
    const team = await firstCr(teamFamily);
    for (const name of ['renamed-1', 'renamed-2', 'renamed-3']) {
      const answer = await t.api('PATCH', '/api/v1/settings/team', { name });
      expect(answer.status).toBe(200);
      const events = await eventually(
        async () => {
          const found = await updates(teamFamily, idOf(team));
          return found.some((e) => e.data.name === name) ? found : null;
        },
        30_000,
        200,
      );
      expect(events.filter((e) => e.data.name === name).map((e) => e.actor)).toEqual([idOf(key)]);
    }
    const after = await readCr(teamFamily, team.metadata.name);
    expect(after.status.observedGeneration).toBe(after.metadata.generation);
    expect(kstatus(after).status).toBe('Current');
  });

  it('reports an edit the API would refuse (the last owner demoted), and settles the fix', async () => {
    const user = await firstCr(userFamily);
    const id = idOf(user);
    expect(user.spec.role).toBe('owner');
    const before = (await updates(userFamily, id)).length;
    const demoted = await patchSpec(userFamily, user.metadata.name, { role: 'member' });
    const refused = await settled(userFamily, user.metadata.name, demoted.metadata.generation);
    expect(refused.status.status_reason).toMatch(/must keep an owner/);
    // Observed, so kstatus is done with it; the change is reported, not applied to the configuration: no .updated.
    expect(kstatus(refused).status).toBe('Current');
    expect(refused.status.observed_config).toBe(user.status.observed_config);
    const restored = await patchSpec(userFamily, user.metadata.name, { role: 'owner', name: 'owner-again' });
    const fixed = await settled(userFamily, user.metadata.name, restored.metadata.generation);
    expect(fixed.status.status_reason ?? null).toBeNull();
    expect(kstatus(fixed).status).toBe('Current');
    const events = await eventually(
      async () => {
        const found = await updates(userFamily, id);
        return found.some((e) => e.data.name === 'owner-again') ? found : null;
      },
      30_000,
      200,
    );
    // One event: of the fix; none of the refused edit.
    expect(events.length).toBe(before + 1);
  });

  it('reports a team whose owner_id names no owner, and clears the report once it names one', async () => {
    const team = await firstCr(teamFamily);
    const owner = team.spec.owner_id as string;
    const stray = await patchSpec(teamFamily, team.metadata.name, { owner_id: 'usr_0000000000000000' });
    const refused = await settled(teamFamily, team.metadata.name, stray.metadata.generation);
    expect(refused.status.status_reason).toMatch(/owner_id must name an active owner/);
    expect(refused.status.observed_config).toBe(team.status.observed_config);
    // Told where kubectl users look: a Warning on the custom resource.
    const warning = await eventually(
      async () => {
        const list = await core.listNamespacedEvent({ namespace });
        return list.items.find((e) => e.involvedObject.kind === 'Team' && e.reason === 'UpdateRefused');
      },
      30_000,
      500,
    );
    expect(warning).toMatchObject({ type: 'Warning', message: expect.stringMatching(/owner_id must name an active owner/) });
    const back = await patchSpec(teamFamily, team.metadata.name, { owner_id: owner });
    const fixed = await settled(teamFamily, team.metadata.name, back.metadata.generation);
    expect(fixed.status.status_reason ?? null).toBeNull();
    expect(kstatus(fixed).status).toBe('Current');
  });

  it('clears the report of a refused edit once the rule holds, with the .updated it held back', async () => {
    const invited = await t.api('POST', '/api/v1/settings/team/members', { email: 'second@example.com', role: 'member' });
    expect(invited.status).toBe(201);
    const id = invited.body.data.id as string;
    const name = id.replace('_', '-');
    const me = await t.api('GET', '/api/v1/settings/profile');
    const ownerEmail = me.body.data.email as string;
    // The second member given the owner's e-mail with kubectl: refused, as an invitation of it would be.
    const taken = await patchSpec(userFamily, name, { email: ownerEmail });
    const refused = await settled(userFamily, name, taken.metadata.generation);
    expect(refused.status.status_reason).toMatch(/is already a member/);
    expect(await updates(userFamily, id)).toEqual([]);
    // The owner moves to another address through the API: the member's edit breaks no rule now.
    expect((await t.api('PATCH', '/api/v1/settings/profile', { email: 'moved@example.com' })).status).toBe(200);
    const cleared = await eventually(
      async () => {
        const cr = await readCr(userFamily, name);
        return cr.status.status_reason ? null : cr;
      },
      60_000,
      200,
    );
    expect(kstatus(cleared).status).toBe('Current');
    const events = await eventually(
      async () => {
        const found = await updates(userFamily, id);
        return found.length > 0 ? found : null;
      },
      30_000,
      200,
    );
    expect(events.map((e) => [e.actor, e.data.email])).toEqual([['system', ownerEmail]]);
  });
});
