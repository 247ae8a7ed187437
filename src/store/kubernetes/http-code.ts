import { codeOf } from '../../lib/unknown-values';

/** Kubernetes answers with an HTTP code in `code`; a network failure has none. */
export function httpCode(err: unknown): number | undefined {
  const code = codeOf(err);
  return typeof code === 'number' ? code : undefined;
}
