import type { Logger } from 'pino';
import type { Config } from '../config';
import type { Store } from '../store/types';
import type { EventBus } from '../events/types';
import type { ResourceWriter } from '../resources/writer';
import type { CloudEvent } from '../resources/cloud-event';

/** The agent as the API sees it: it answers a question in a thread from the team's data. */
export interface Agent {
  /** `tools`: the reads an LLM may call to answer, made as the person who asked. */
  answer(team: string, threadId: string, question: string, tools?: AgentTools): Promise<string>;
}

/** A read the agent's LLM may call, described as a function of OpenAI's chat completions. */
export interface AgentTool {
  name: string;
  description: string;
  /** JSON Schema of the call's arguments. */
  parameters: Record<string, unknown>;
}

/**
 * The API's reads as tools, made as the person who asked (their key, role and team), so a
 * model sees exactly what that person could read; the API builds them (api/mcp.ts).
 */
export interface AgentTools {
  readonly list: AgentTool[];
  /** The API's answer as JSON text; a refusal or an error is text too, for the model to read. */
  call(name: string, args: Record<string, unknown>): Promise<string>;
}

export interface EventFilter {
  resource_id?: string;
  type?: string;
  since?: string;
}

/**
 * A team's events, searched: what the agent reads of the audit log. audit/ is a peer of
 * agent/, so the composition root (service.ts) hands the audit log in through this.
 */
export interface EventHistory {
  /** The team's events oldest first: those about one resource, or of a type (or `category.*`), or created since a time. */
  search(team: string, filter: EventFilter): CloudEvent[];
  /** Up to `count` of the team's newest events of the filter that are `wanted`, newest first, from no more than `scanLimit` looked at. */
  newest(team: string, filter: EventFilter, count: number, wanted: (event: CloudEvent) => boolean, scanLimit: number): CloudEvent[];
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
