/**
 * What a server's `image` and `plan` stand for on a cluster: the image catalog maps the
 * API's image names (`ubuntu-24.04`) to what runs, and each plan to the CPU and memory it
 * asks of a node. Shared by every driver that runs servers on Kubernetes: the Pod driver
 * reads a catalog entry's container image and command, a KubeVirt driver would read a
 * disk image of its own from the same names, and both take the plan's resources.
 */
import { Type } from '@sinclair/typebox';
import { SERVER_PLANS } from '../../resources/server';

export interface CatalogImage {
  /** A container image reference (`docker.io/library/ubuntu:24.04`). */
  image: string;
  /**
   * What the container runs. A distribution image's own command is a shell that exits at
   * once without a terminal; a server must keep running, so the default entries sleep.
   */
  command?: string[];
}

/** API image name → what runs. */
export type ServerImageCatalog = Record<string, CatalogImage>;

/** The catalog's shape, as CLOUDPLANE_SERVER_IMAGES gives it. */
export const ServerImageCatalogSchema = Type.Record(
  Type.String({ minLength: 1 }),
  Type.Object({ image: Type.String({ minLength: 1 }), command: Type.Optional(Type.Array(Type.String())) }, { additionalProperties: false }),
);

export interface PlanResources {
  requests: Record<string, string>;
  limits: Record<string, string>;
}

/** Plan name → what a server of that plan asks of the node. */
export type ServerPlanResources = Record<string, PlanResources>;

const Quantities = Type.Record(Type.String({ minLength: 1 }), Type.String({ minLength: 1 }));
/** The plans' shape, as CLOUDPLANE_SERVER_PLANS gives it. */
export const ServerPlanResourcesSchema = Type.Record(Type.String({ minLength: 1 }), Type.Object({ requests: Quantities, limits: Quantities }, { additionalProperties: false }));

const KEEP_RUNNING = ['sleep', 'infinity'];

export const DEFAULT_SERVER_IMAGES: ServerImageCatalog = {
  'ubuntu-24.04': { image: 'docker.io/library/ubuntu:24.04', command: KEEP_RUNNING },
  'ubuntu-22.04': { image: 'docker.io/library/ubuntu:22.04', command: KEEP_RUNNING },
  'debian-12': { image: 'docker.io/library/debian:12', command: KEEP_RUNNING },
};

/**
 * A plan is the machine's size, so a server gets it whole: requests equal limits (the
 * Guaranteed QoS class), as a VM of that size would not share its CPUs or memory.
 */
function whole(cpu: string, memory: string): PlanResources {
  return { requests: { cpu, memory }, limits: { cpu, memory } };
}

export const DEFAULT_PLAN_RESOURCES: ServerPlanResources = {
  's-1vcpu-1gb': whole('1', '1Gi'),
  's-1vcpu-2gb': whole('1', '2Gi'),
  's-2vcpu-4gb': whole('2', '4Gi'),
  's-4vcpu-8gb': whole('4', '8Gi'),
  's-8vcpu-16gb': whole('8', '16Gi'),
};

/** Every plan the API accepts must have resources: a gap would fail servers at run time. */
export function missingPlans(plans: ServerPlanResources): string[] {
  return SERVER_PLANS.filter((plan) => !plans[plan]);
}

export type Resolved = { ok: true; image: CatalogImage; resources: PlanResources } | { ok: false; reason: string };

/** The image and resources of a server, or why it cannot run (a name the catalog lacks). */
export function resolveServer(spec: { image: string; plan: string }, catalog: ServerImageCatalog, plans: ServerPlanResources): Resolved {
  const image = Object.hasOwn(catalog, spec.image) ? catalog[spec.image] : undefined;
  if (!image) return { ok: false, reason: `the image '${spec.image}' is not in the server image catalog (offered: ${Object.keys(catalog).sort().join(', ') || 'none'})` };
  const resources = Object.hasOwn(plans, spec.plan) ? plans[spec.plan] : undefined;
  if (!resources) return { ok: false, reason: `the plan '${spec.plan}' has no resources configured` };
  return { ok: true, image, resources };
}
