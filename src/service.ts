/**
 * The composition root: builds the store, event bus, provider, reconcilers, outbox
 * relay, agent and API for a configuration, starts them in order and stops them in
 * reverse. `make run`, the tests and the benchmarks all start the service through here.
 */
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Config } from './config';
import { createLogger } from './logger';
import { createStore } from './store';
import { EmbeddedEventBus } from './events/embedded-bus';
import { OutboxRelay } from './events/outbox-relay';
import { NatsEventBus } from './events/nats-bus';
import type { EventBus } from './events/types';
import { createProvider } from './providers';
import { ResourceWriter } from './resources/writer';
import { families } from './resources/registry';
import { ApiKeyAuthenticator } from './accounts/authenticator';
import { ensureBootstrap, NewTeam } from './accounts/bootstrap';
import { Controller } from './controllers/controller';
import { buildReconcilers } from './controllers/registry';
import { buildApp } from './api/app';
import type { ApiContext } from './api/context';
import type { Store } from './store/types';
import { createAgent } from './agent';
import { AuditLog } from './audit/audit-log';
import { WebhookDispatcher } from './webhooks/dispatcher';

export interface RunningService {
  app: FastifyInstance;
  ctx: ApiContext;
  /** Base URL the API listens on, e.g. http://127.0.0.1:8080. */
  url: string;
  /** What first start created (with the one-time key), or null. */
  bootstrap: NewTeam | null;
  stop(): Promise<void>;
}

const SYSTEM_TEAM = '__system';

/** The key that signs list cursors, made once and kept as a secret so cursors survive restarts. */
async function cursorKeyOf(store: Store): Promise<Buffer> {
  const existing = await store.getSecret(SYSTEM_TEAM, 'cursor-signing-key');
  if (existing) return Buffer.from(existing.key, 'base64');
  const key = randomBytes(32);
  await store.putSecret(SYSTEM_TEAM, 'cursor-signing-key', { key: key.toString('base64') });
  return key;
}

export async function startService(config: Config, logger: Logger = createLogger(config.logLevel)): Promise<RunningService> {
  const store = createStore(config, logger);
  await store.start();
  const bus: EventBus = config.nats
    ? new NatsEventBus({ ...config.nats, logger })
    : new EmbeddedEventBus(path.join(config.dataDir, 'events'));
  await bus.start();
  const provider = createProvider(config, logger);
  const writer = new ResourceWriter(store);
  const authenticator = new ApiKeyAuthenticator(store, writer);
  await authenticator.start();
  const bootstrap = await ensureBootstrap(store, writer, authenticator, config.bootstrapApiKey);
  const cursorKey = await cursorKeyOf(store);
  const agent = createAgent({ store, bus, config, logger, writer });
  const audit = new AuditLog(bus, config.eventRetentionMs);
  audit.start();
  const ctx: ApiContext = { config, store, bus, provider, writer, authenticator, agent, audit, cursorKey, logger };

  const relay = new OutboxRelay(store, bus, families.map((f) => f.kind), logger);
  await relay.start();
  const controllers = buildReconcilers({ store, writer, provider, config }).map(
    (reconciler) => new Controller(store, reconciler, { workers: config.workersPerController, resyncMs: config.resyncMs, logger }),
  );
  for (const controller of controllers) await controller.start();
  const webhooks = new WebhookDispatcher({ store, writer, bus, config: config.webhooks, logger });
  await webhooks.start();
  await agent.start?.();

  let ready = false;
  const app = await buildApp(ctx, { isReady: () => ready });
  await app.listen({ host: config.host, port: config.port });
  ready = true;
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;

  return {
    app,
    ctx,
    url: `http://${host}:${port}`,
    bootstrap,
    async stop() {
      ready = false;
      await app.close();
      await agent.stop?.();
      audit.stop();
      for (const controller of controllers) await controller.stop();
      await webhooks.stop();
      await relay.stop();
      await bus.stop();
      await store.stop();
    },
  };
}
