/**
 * Incidents: carries out what was asked in the spec (by a person through the API or
 * kubectl, or by the alert policy whose alert resolved) and writes the status, naming who
 * asked in the event. The status only moves forward: open -> acknowledged -> resolved,
 * or open -> resolved.
 */
import type { Store } from '../store/types';
import type { ResourceWriter } from '../resources/writer';
import { CLOSED_INCIDENT_STATES, Incident, incidentFamily as family } from '../resources/incident';
import { nowIso } from '../lib/time';
import type { Reconciler } from './controller';

const SYSTEM = 'system';

export class IncidentReconciler implements Reconciler {
  readonly kind = family.kind;

  constructor(
    private readonly store: Store,
    private readonly writer: ResourceWriter,
  ) {}

  async reconcile(team: string, id: string): Promise<undefined> {
    const incident = await this.store.get<Incident['spec'], Incident['status']>(this.kind, team, id);
    if (!incident?.status.status || CLOSED_INCIDENT_STATES.includes(incident.status.status)) return;
    const { spec } = incident;
    if (spec.resolve_requested) {
      const by = spec.resolved_by ?? SYSTEM;
      await this.write(incident, { status: 'resolved', resolved_at: nowIso(), resolved_by: by }, by);
    } else if (spec.acknowledge_requested && incident.status.status === 'open') {
      const by = spec.acknowledged_by ?? SYSTEM;
      await this.write(incident, { status: 'acknowledged', acknowledged_at: nowIso(), acknowledged_by: by }, by);
    } else if (incident.status.observed_generation < incident.meta.generation) {
      await this.write(incident, {}, SYSTEM);
    }
  }

  /** The intent is observed with the move, so kstatus does not wait on it; skipped if another writer moved it first. */
  private async write(incident: Incident, changes: Partial<Incident['status']>, actor: string): Promise<void> {
    await this.writer.mutateStatus<Incident>(
      family,
      incident.meta.team,
      incident.meta.id,
      (latest) => (latest.status.status !== incident.status.status ? null : { ...changes, observed_generation: latest.meta.generation }),
      actor,
    );
  }
}
