/** Builds the agent for the service. */
import type { Agent, AgentDeps } from './types';
import { DataAgent } from './agent';
import { AlertFeed } from './alert-feed';

/**
 * `start` begins posting alerts to each team's "Alerts" thread (a durable consumer, so one
 * replica at a time is enough); answering works without it, from the audit log.
 */
export function createAgent(deps: AgentDeps): Agent & { start(): void; stop(): Promise<void> } {
  return new DataAgent(deps, deps.audit, new AlertFeed(deps.bus, deps.writer, deps.logger));
}
