/**
 * One HTTP attempt of a delivery: POST the raw body with its headers to the address the
 * target guard checked, within the timeout. Success is a 2xx answer; a redirect is a
 * failure (it is never followed: it could lead anywhere).
 *
 * `error` is shown to the tenant in the delivery record, so it names no resolved address
 * or port (Node's connection errors do: "connect ECONNREFUSED 10.0.0.5:443"); what the
 * operator needs to look into a failure is in `detail`, which only the log gets.
 */
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { NO_PUBLIC_ADDRESS, resolveTarget, TargetPolicy } from '../lib/target-guard';
import { fieldOf, messageOf, textOf } from '../lib/unknown-values';
import type { DeliveryConnections } from './connections';

export interface AttemptResult {
  ok: boolean;
  status: number | null;
  /** Human-readable reason of a failure, for the tenant; null on success. */
  error: string | null;
  /** The failure as Node reported it, addresses included: for the operator's log only. */
  detail?: string;
  retryAfter?: string;
  /** The first RESPONSE_BODY_BYTES of the answer's body, as UTF-8; absent when no answer came. */
  responseBody?: string;
  /** From the request's start to the end of the answer (or the failure); absent when the service did not time it (a listener's answer). */
  latencyMs?: number;
}

/** What a tenant is told of a connection that failed, by Node's error code; the message (with the address) is not shown. */
const CONNECTION_ERRORS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset by the receiver',
  EPIPE: 'connection closed by the receiver',
  ETIMEDOUT: 'connection timed out',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  EHOSTDOWN: 'host down',
  ENOTFOUND: NO_PUBLIC_ADDRESS,
  EAI_AGAIN: NO_PUBLIC_ADDRESS,
};

function connectionError(err: NodeJS.ErrnoException): string {
  const code = err.code ?? '';
  if (CONNECTION_ERRORS[code]) return CONNECTION_ERRORS[code];
  // TLS failures carry a code of their own (CERT_HAS_EXPIRED, ERR_TLS_CERT_ALTNAME_INVALID, ...).
  return /^[A-Z][A-Z0-9_]+$/.test(code) ? `connection failed (${code})` : 'connection failed';
}

const MAX_ERROR_BODY = 200;
/** Kept of each answer's body in the delivery's attempt log. */
export const RESPONSE_BODY_BYTES = 1024;
const USER_AGENT = 'Cloudplane-Webhooks/1';

/** The headers of an attempt's POST: the signed ones, and the transport's own. A listener's CLI sends exactly these. */
export function postHeaders(signed: Record<string, string>, body: string): Record<string, string> {
  return { ...signed, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), 'user-agent': USER_AGENT };
}

export async function sendDelivery(
  target: string,
  headers: Record<string, string>,
  body: string,
  timeoutMs: number,
  policy: TargetPolicy,
  connections: DeliveryConnections,
): Promise<AttemptResult> {
  let resolved: Awaited<ReturnType<typeof resolveTarget>>;
  try {
    resolved = await resolveTarget(target, policy);
  } catch (err) {
    return { ok: false, status: null, error: `refused: ${textOf(err)}`, detail: messageOf(fieldOf(err, 'cause')) };
  }
  const { url, address, family } = resolved;
  // Connect to the checked address whatever a second DNS lookup would say.
  const pinned: LookupFunction = (_hostname, options, callback) => {
    if (options.all) callback(null, [{ address, family }]);
    else callback(null, address, family);
  };
  const startedAt = Date.now();
  const post = (agent: http.Agent) =>
    postOnce(url, { method: 'POST', agent, lookup: pinned, headers: postHeaders(headers, body) }, body, startedAt + timeoutMs, timeoutMs);
  let result = await post(connections.agentFor(url));
  // A kept connection that the receiver closed as this attempt took it: once more, on a new one.
  if (result.keptConnectionClosed) result = await post(connections.agentFor(url, true));
  const { keptConnectionClosed: _, ...attempt } = result;
  return { ...attempt, latencyMs: Date.now() - startedAt };
}

/** One POST until `deadline`; the connection is closed after a failure, and otherwise left to its agent. */
function postOnce(
  url: URL,
  options: http.RequestOptions,
  body: string,
  deadline: number,
  timeoutMs: number,
): Promise<AttemptResult & { keptConnectionClosed?: boolean }> {
  const client = url.protocol === 'https:' ? https : http;
  return new Promise((resolve) => {
    let settled = false;
    let answered = false;
    const finish = (result: AttemptResult & { keptConnectionClosed?: boolean }, close: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (close) request.destroy();
      resolve(result);
    };
    const request = client.request(url, options, (response) => {
      answered = true;
      const status = response.statusCode ?? 0;
      const kept: Buffer[] = [];
      let keptBytes = 0;
      response.on('data', (chunk: Buffer) => {
        if (keptBytes >= RESPONSE_BODY_BYTES) return;
        const part = chunk.subarray(0, RESPONSE_BODY_BYTES - keptBytes);
        kept.push(part);
        keptBytes += part.length;
      });
      response.on('end', () => {
        // A character cut at the KiB's edge decodes as U+FFFD, which is still valid JSON text.
        const responseBody = Buffer.concat(kept).toString('utf8');
        const retryAfter = typeof response.headers['retry-after'] === 'string' ? response.headers['retry-after'] : undefined;
        // Read to its end, the answer leaves its connection to the agent, to be kept or closed.
        if (status >= 200 && status < 300) {
          finish({ ok: true, status, error: null, responseBody }, false);
          return;
        }
        const kind = status >= 300 && status < 400 ? 'redirect (not followed)' : 'status';
        const text = responseBody.slice(0, MAX_ERROR_BODY);
        finish({ ok: false, status, error: `receiver answered ${kind} ${status}${text ? `: ${text}` : ''}`, retryAfter, responseBody }, false);
      });
      response.on('error', (err) => {
        finish({ ok: false, status, error: 'reading the answer failed', detail: err.message, responseBody: Buffer.concat(kept).toString('utf8') }, true);
      });
    });
    const timer = setTimeout(
      () => {
        finish({ ok: false, status: null, error: `no answer within ${timeoutMs / 1000} s` }, true);
      },
      Math.max(0, deadline - Date.now()),
    );
    request.on('error', (err: NodeJS.ErrnoException) => {
      const keptConnectionClosed = request.reusedSocket && !answered && (err.code === 'ECONNRESET' || err.code === 'EPIPE');
      finish({ ok: false, status: null, error: connectionError(err), detail: err.message, keptConnectionClosed }, true);
    });
    request.end(body);
  });
}
