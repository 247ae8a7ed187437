import type { Logger } from 'pino';
import type { Config } from '../config';
import type { Store } from '../store/types';
import type { EventBus } from '../events/types';
import type { ResourceWriter } from '../resources/writer';
import type { CloudEvent } from '../resources/cloud-event';

/** The agent as the API sees it: it answers a question in a thread from the team's data. */
export interface Agent {
  answer(team: string, threadId: string, question: string): Promise<string>;
}

/**
 * A team's events, searched: what the agent reads of the audit log. audit/ is a peer of
 * agent/, so the composition root (service.ts) hands the audit log in through this.
 */
export interface EventHistory {
  /** The team's events oldest first: those about one resource, or those created since a time. */
  search(team: string, filter: { resource_id?: string; since?: string }): CloudEvent[];
}

export interface AgentDeps {
  store: Store;
  bus: EventBus;
  config: Config;
  logger: Logger;
  writer: ResourceWriter;
  /** The team's recent events to answer from: the service's audit log (audit/audit-log.ts). */
  audit: EventHistory;
  /** The OpenAPI document the service serves ("how do I …" answers from it); undefined until the API is built. */
  apiDocument?: () => unknown;
}
