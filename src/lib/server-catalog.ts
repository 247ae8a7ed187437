/**
 * The servers on offer: the plans the API accepts, and what an image name and a plan stand
 * for on a cluster (the image catalog maps the API's image names, `ubuntu-24.04`, to what
 * runs; each plan to the CPU and memory it asks of a node), with their defaults. Data, read
 * by the configuration (CLOUDPLANE_SERVER_IMAGES, CLOUDPLANE_SERVER_PLANS), the server
 * family's schema (resources/server.ts) and the drivers that run servers on Kubernetes
 * (drivers/kubernetes/server-catalog.ts), so it sits below all of them.
 */
import { Type } from '@sinclair/typebox';

/** The plans the API accepts (a server's `plan`). */
export const SERVER_PLANS = ['s-1vcpu-1gb', 's-1vcpu-2gb', 's-2vcpu-4gb', 's-4vcpu-8gb', 's-8vcpu-16gb'];

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
export const ServerPlanResourcesSchema = Type.Record(
  Type.String({ minLength: 1 }),
  Type.Object({ requests: Quantities, limits: Quantities }, { additionalProperties: false }),
);

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
export function missingPlans(plans: Readonly<Record<string, PlanResources | undefined>>): string[] {
  return SERVER_PLANS.filter((plan) => !plans[plan]);
}
