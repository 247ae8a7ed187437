/**
 * Which events are alerts, and how the agent words them. The event catalogue
 * (docs/api.md "Events", docs/api.md) has two kinds of failure: a resource that ends in
 * `failed` (`<family>.failed`: load balancers, VPN gateways, servers, buckets, file
 * shares, jobs) and a webhook subscription the service switched off
 * (`webhook.disabled`). Everything else is routine.
 */
import type { CloudEvent } from '../resources/cloud-event';
import { categoryOf } from '../events/types';
import { families } from '../resources/registry';
import { recordAt, scalarText } from '../lib/unknown-values';

export interface Alert {
  /** `load balancer lb_… "web"` */
  subject: string;
  /** `failed` or `was disabled` */
  verb: string;
  reason: string | null;
  nextStep: string;
}

const API = '/api/v1';

/** Incident events the agent tells the team of (src/resources/incident.ts): each opened, and each resolved. */
const INCIDENT_NEWS = ['incident.opened', 'incident.resolved'];

export function isAlert(event: CloudEvent): boolean {
  return event.type.endsWith('.failed') || event.type === 'webhook.disabled' || INCIDENT_NEWS.includes(event.type);
}

/** The alert types of a category (an event's type up to its dot), as isAlert judges them. */
export function alertTypesOf(category: string): string[] {
  return [`${category}.failed`, 'webhook.disabled', ...INCIDENT_NEWS].filter((type) => categoryOf(type) === category);
}

/** A text field of an event's data; null when it has none. */
const textOf = (value: unknown): string | null => (typeof value === 'string' ? value : null);

/** The alert an event raises, or null for a routine event. */
export function alertOf(event: CloudEvent): Alert | null {
  if (!isAlert(event)) return null;
  const category = categoryOf(event.type);
  const family = families.find((f) => f.name === category);
  const data = recordAt(event, 'data') ?? {};
  const id = scalarText(data.id) ?? '';
  const name = textOf(data.name ?? data.url);
  const subject = `${family?.title ?? category.replace(/_/g, ' ')} ${id}${name ? ` "${name}"` : ''}`;
  if (INCIDENT_NEWS.includes(event.type)) return incidentAlert(event.type, id, data);
  if (event.type === 'webhook.disabled') {
    return {
      subject,
      verb: 'was disabled',
      reason: textOf(data.disabled_reason),
      nextStep:
        `its deliveries have stopped. Check why the receiver refuses them (GET ${API}/webhooks/${id}/deliveries shows each attempt's answer), ` +
        `fix it, then re-enable the subscription with PATCH ${API}/webhooks/${id} {"active": true}.`,
    };
  }
  const reason = textOf(data.status_reason);
  const exit = category === 'job' && typeof data.exit_code === 'number' ? ` with exit code ${data.exit_code}` : '';
  return { subject, verb: `failed${exit}`, reason, nextStep: nextStepForFailure(category, family?.path ?? '', id, reason) };
}

/** An incident opened by an alert policy, or resolved (by a person, or with its alert). */
function incidentAlert(type: string, id: string, data: Record<string, unknown>): Alert {
  const subject = `incident ${id} "${scalarText(data.title) ?? ''}"`;
  if (type === 'incident.resolved') {
    const by = data.resolved_by === 'system' ? 'by itself: its alert resolved' : `by ${String(data.resolved_by)}`;
    return { subject, verb: `was resolved ${by}`, reason: null, nextStep: `nothing; GET ${API}/incidents/${id} keeps its record.` };
  }
  return {
    subject,
    verb: 'opened',
    reason: `alert policy ${String(data.policy_id)} fired for ${String(data.resource_id)}`,
    nextStep: `acknowledge it (POST ${API}/incidents/${id}/acknowledge), look at ${String(data.resource_id)}, and resolve it (POST ${API}/incidents/${id}/resolve) once fixed; it resolves by itself when the condition clears.`,
  };
}

function nextStepForFailure(category: string, path: string, id: string, reason: string | null): string {
  if (category === 'job') return `check the job's command and image (GET ${API}/jobs/${id}), then create it again; a failed job is kept as history.`;
  const recreate = `delete it (DELETE ${API}/${path}/${id}) and create it again`;
  if (reason && /capacity|region/i.test(reason)) return `${recreate} in another region (GET ${API}/regions lists them).`;
  if (category === 'vpn_gateway') return `check the remote peer address and the network ranges, then ${recreate}.`;
  return `${recreate}; if it fails again, see GET ${API}/audit-log?resource_id=${id} for its history.`;
}

/** The message posted to the team's alert thread. */
export function alertMessage(event: CloudEvent, alert: Alert): string {
  const subject = alert.subject.charAt(0).toUpperCase() + alert.subject.slice(1);
  return [
    `${subject} ${alert.verb} at ${event.created_at}.`,
    alert.reason ? `Reason: ${alert.reason}` : null,
    `Next step: ${alert.nextStep}`,
    `(event ${event.id}, ${event.type})`,
  ]
    .filter((line) => line !== null)
    .join('\n');
}

/** One line of an answer listing what failed. */
export function alertLine(event: CloudEvent, alert: Alert): string {
  return `${alert.subject.charAt(0).toUpperCase() + alert.subject.slice(1)} ${alert.verb} at ${event.created_at}${alert.reason ? ` — ${alert.reason}` : ''}`;
}
