/**
 * What a server's `image` and `plan` stand for on a cluster: the image catalog maps the
 * API's image names (`ubuntu-24.04`) to what runs, and each plan to the CPU and memory it
 * asks of a node. Shared by every driver that runs servers on Kubernetes: the Pod driver
 * reads a catalog entry's container image and command, a KubeVirt driver would read a
 * disk image of its own from the same names, and both take the plan's resources. The
 * catalog's shape and defaults are lib/server-catalog.ts, which the configuration reads.
 */
import type { CatalogImage, PlanResources, ServerImageCatalog, ServerPlanResources } from '../../lib/server-catalog';

export type Resolved = { ok: true; image: CatalogImage; resources: PlanResources } | { ok: false; reason: string };

/** The image and resources of a server, or why it cannot run (a name the catalog lacks). */
export function resolveServer(spec: { image: string; plan: string }, catalog: ServerImageCatalog, plans: ServerPlanResources): Resolved {
  const image = Object.hasOwn(catalog, spec.image) ? catalog[spec.image] : undefined;
  if (!image)
    return { ok: false, reason: `the image '${spec.image}' is not in the server image catalog (offered: ${Object.keys(catalog).sort().join(', ') || 'none'})` };
  const resources = Object.hasOwn(plans, spec.plan) ? plans[spec.plan] : undefined;
  if (!resources) return { ok: false, reason: `the plan '${spec.plan}' has no resources configured` };
  return { ok: true, image, resources };
}
