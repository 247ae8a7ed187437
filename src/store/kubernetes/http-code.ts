/** Kubernetes answers with an HTTP code in `code`; a network failure has none. */
export function httpCode(err: unknown): number | undefined {
  const code = (err as { code?: unknown })?.code;
  return typeof code === 'number' ? code : undefined;
}
