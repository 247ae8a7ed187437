/** Builds the agent for the service. */
import type { Logger } from 'pino';
import type { Config } from '../config';
import type { Store } from '../store/types';
import type { EventBus } from '../events/types';
import type { ResourceWriter } from '../resources/writer';
import type { Agent } from './types';
import { DataAgent } from './agent';

export interface AgentDeps {
  store: Store;
  bus: EventBus;
  config: Config;
  logger: Logger;
  writer: ResourceWriter;
}

export function createAgent(deps: AgentDeps): Agent & { start?(): Promise<void>; stop?(): Promise<void> } {
  return new DataAgent(deps);
}
