/**
 * Whether the API shows a stored object: not once destroyed, and not before it has a
 * status (a custom resource made with kubectl gets its first status from adoption).
 */
export function isVisible(resource: { status?: { status?: string } } | undefined): boolean {
  const state = resource?.status?.status;
  return state !== undefined && state !== 'destroyed';
}
