/** Builds the agent for the service. */
import type { Logger } from 'pino';
import type { Config } from '../config';
import type { Store } from '../store/types';
import type { EventBus } from '../events/types';
import type { ResourceWriter } from '../resources/writer';
import { AuditLog } from '../audit/audit-log';
import type { Agent } from './types';
import { DataAgent } from './agent';
import { AlertFeed } from './alert-feed';

export interface AgentDeps {
  store: Store;
  bus: EventBus;
  config: Config;
  logger: Logger;
  writer: ResourceWriter;
  /** The service's audit log; without one the agent follows the bus into a view of its own. */
  audit?: AuditLog;
}

/**
 * `start` begins posting alerts to each team's "Alerts" thread (a durable consumer, so one
 * replica at a time is enough); answering works without it, from the audit log.
 */
export function createAgent(deps: AgentDeps): Agent & { start(): Promise<void>; stop(): Promise<void> } {
  return new DataAgent(deps, deps.audit ?? ownAuditLog(deps), new AlertFeed(deps.bus, deps.writer, deps.logger));
}

/**
 * Started here rather than in `start`, which may run on the leader only: every replica
 * answers questions. It follows the bus until the bus stops.
 */
function ownAuditLog(deps: AgentDeps): AuditLog {
  const audit = new AuditLog(deps.bus, deps.config.eventRetentionMs);
  audit.start();
  return audit;
}
