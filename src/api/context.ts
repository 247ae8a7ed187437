/** What route modules get to work with: the composition root builds one of these. */
import type { Logger } from 'pino';
import type { Config } from '../config';
import type { Store } from '../store/types';
import type { EventBus } from '../events/types';
import type { DriverSet } from '../drivers/registry';
import type { ResourceWriter } from '../resources/writer';
import type { ApiKeyAuthenticator } from '../accounts/authenticator';
import type { ActiveSession, SessionManager } from '../accounts/sessions';
import type { OidcSignIn } from '../accounts/oidc';
import type { Agent, AgentTools } from '../agent/types';
import type { AuditLog } from '../audit/audit-log';
import type { Principal, Requirement } from '../accounts/roles';
import type { UsageMeter } from '../usage';
import type { QuotaScope } from '../resources/quota';
import type { SharedRecords } from '../store/shared-records';
import type { ResourceWatches } from './watches';
import type { SimulationFaults } from '../drivers/simulated/faults';

export interface ApiContext {
  config: Config;
  store: Store;
  bus: EventBus;
  /** The driver of each reconciled family; meta.provider is its health. */
  drivers: DriverSet;
  writer: ResourceWriter;
  /** What creates count their team's quotas against (resources/quota.ts). */
  quota: QuotaScope;
  /** Records the replicas share (NATS JetStream), for counts that must hold across them; none for a process alone. */
  shared?: SharedRecords;
  authenticator: ApiKeyAuthenticator;
  sessions: SessionManager;
  /** Sign-in through the identity provider, when one is configured. */
  oidc?: OidcSignIn;
  agent: Agent;
  audit: AuditLog;
  /** Usage metering: counts this replica's requests, answers GET /api/v1/usage. */
  usage: UsageMeter;
  /** Key that signs list cursors, so a tampered cursor is recognised. */
  cursorKey: Buffer;
  /** The watches of resources this replica serves (GET ...?watch=true). */
  watches: ResourceWatches;
  /** The faults teams ask of the simulated drivers; only with CLOUDPLANE_SIMULATION_API=true (routes/simulation.ts). */
  faults?: SimulationFaults;
  logger: Logger;
}

declare module 'fastify' {
  interface FastifyRequest {
    principal?: Principal;
    /** The console session the request came with, when it was authenticated by its cookie. */
    session?: ActiveSession;
    /** The API's reads as the agent's tools, made as this request's caller (api/mcp.ts); set on authenticated routes. */
    readonly agentTools?: AgentTools;
  }
  interface FastifyContextConfig {
    /** The resource family a route serves: drives meta.provider on its answers and errors. */
    family?: string;
    /** What the route needs beyond what its method implies (accounts/roles.ts); checked for every route by the authentication hook. */
    requires?: Requirement;
    /** A read by its method that acts (a listener's stream): it needs what a write needs, a member and a read_write key. */
    actsAsWrite?: boolean;
    /**
     * The route carries calls of other routes, each made as a request of its own and judged
     * there (the MCP endpoint's tool calls): the route itself needs only what a read needs.
     */
    judgedPerCall?: boolean;
    /** Any authenticated caller, whatever its role and scope: the route changes only the caller's own session (sign-out, choosing a team). */
    ownSession?: boolean;
    /** The answer carries a secret its schema does not show (a session cookie): sent with Cache-Control: no-store (plugins/secret-answers.ts). */
    carriesSecret?: boolean;
  }
}
