/**
 * The composition root: builds the store, event bus, provider, reconcilers, outbox
 * relay, agent and API for a configuration, starts them in order and stops them in
 * reverse. `make run`, the tests and the benchmarks all start the service through here.
 * Every replica serves the API; only the leader (see controllers/leader-election.ts) runs
 * the work that must happen once: reconcilers, the outbox relay, webhook deliveries.
 */
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Config } from './config';
import { createLogger } from './logger';
import { teamNamespaceWatchesFor } from './store';
import { createStore } from './resources/store-of-record';
import { DataDirHealth } from './store/data-dir-health';
import { EmbeddedEventBus } from './events/embedded-bus';
import { OutboxRelay } from './events/outbox-relay';
import { NatsEventBus } from './events/nats-bus';
import { NatsSharedRecords } from './store/nats-shared-records';
import { warnOfOwnCounts } from './store/shared-records';
import { quotaLimits, QuotaScope } from './resources/quota';
import type { EventBus } from './events/types';
import { ResourceWriter } from './resources/writer';
import { families } from './resources/registry';
import { ApiKeyAuthenticator } from './accounts/authenticator';
import { SessionManager } from './accounts/sessions';
import { OidcSignIn } from './accounts/oidc';
import { ensureBootstrap, NewTeam } from './accounts/bootstrap';
import { Controller } from './controllers/controller';
import { buildReconcilers } from './controllers/registry';
import { buildFamilies, BuiltFamilies } from './families/build';
import { FAMILY_MODULES } from './families';
import { buildApp } from './api/app';
import type { ApiContext } from './api/context';
import type { Store } from './store/types';
import { createAgent } from './agent';
import { AuditLog } from './audit/audit-log';
import { UsageMeter } from './usage';
import { WebhookDispatcher } from './webhooks/dispatcher';
import { WebhookRetention } from './webhooks/retention';
import { RecordSweeper } from './controllers/record-sweeper';
import { RECORD_KINDS, RECORD_SWEEP_RULES } from './record-upkeep';
import { moveRecordsOutOfSecrets } from './store/records-out-of-secrets';
import { embeddedEventRecorder, KubernetesEventRecorder } from './controllers/events-recorder';
import { CoordinationV1Api } from '@kubernetes/client-node';
import { kubeConfigFor } from './store';
import { LeaderCallbacks, LeaderElector, Leadership, SoleLeader } from './controllers/leader-election';
import { reportEventConsumers, reportLeadership } from './metrics';
import { fieldOf, textOf } from './lib/unknown-values';
import { limitHeapGrowth } from './lib/heap-growth';
import { ResourceWatches } from './api/watches';
import { SimulationFaults } from './drivers/simulated/faults';
import { applyInitManifests, readInitManifests } from './init-manifests';

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
  // Create-only: replicas starting at once end up with the same key.
  const stored = await store.secrets.add(SYSTEM_TEAM, 'cursor-signing-key', { key: randomBytes(32).toString('base64') });
  return Buffer.from(stored.key, 'base64');
}

export async function startService(config: Config, logger: Logger = createLogger(config.logLevel)): Promise<RunningService> {
  // What has started, to stop in reverse: on stop(), or when a later part fails to start
  // (a half-started service must not keep watches, timers or the data directory open).
  const started: Array<() => Promise<void> | void> = [];
  const stopAll = async () => {
    for (const stop of started.splice(0).reverse()) await stop();
  };
  // The process's heap grows in small steps past what is live (lib/heap-growth.ts).
  limitHeapGrowth(config.heapGrowingPercent);
  try {
    // First, so that a family left without a driver, or a quota naming none, stops start-up before anything opens.
    // In cluster mode the store and the drivers watch the team namespaces on the same watches.
    const watches = config.kubernetes ? teamNamespaceWatchesFor(config.kubernetes, logger) : undefined;
    const familyParts = buildFamilies(FAMILY_MODULES, families, config, logger, watches);
    // Read and checked before anything opens: a bad manifest stops start-up naming it.
    const initManifests = config.initDir ? readInitManifests(config.initDir) : [];
    const { drivers } = familyParts;
    const limits = quotaLimits(families, config.quotas);
    // The embedded store and bus report refused writes of the data directory in one place.
    const health = new DataDirHealth(config.dataDir, logger);
    const store = createStore(config, logger, health, watches);
    await store.start();
    started.push(() => store.stop());
    const moved = await moveRecordsOutOfSecrets(store, RECORD_KINDS);
    if (moved > 0) logger.info({ moved }, 'moved records kept as secrets by an earlier version out of the secrets');
    const bus: EventBus = config.nats
      ? new NatsEventBus({ ...config.nats, logger })
      : new EmbeddedEventBus(path.join(config.dataDir, 'events'), { health, logger, retentionMs: config.eventRetentionMs });
    await bus.start();
    started.push(() => bus.stop());
    const shared = config.nats ? new NatsSharedRecords({ servers: config.nats.servers, bucket: config.nats.countsBucket }) : undefined;
    if (shared) {
      await shared.start();
      started.push(() => shared.stop());
    }
    const quota: QuotaScope = { store, limits, shared, onSharedFailure: warnOfOwnCounts(logger, 'quota claims') };
    reportEventConsumers(() => bus.pending());
    const events = config.kubernetes
      ? new KubernetesEventRecorder(kubeConfigFor(config.kubernetes), config.kubernetes.systemNamespace, logger)
      : embeddedEventRecorder;
    const writer = new ResourceWriter(store, events);
    const authenticator = new ApiKeyAuthenticator(store, writer);
    await authenticator.start();
    const bootstrap = await ensureBootstrap(store, writer, authenticator, config.bootstrapApiKey);
    // The install's first start made the first team: it starts with the init manifests' resources.
    if (bootstrap?.madeTeam && initManifests.length > 0) {
      await applyInitManifests(store, bootstrap.teamId, initManifests);
      logger.info({ manifests: initManifests.length, team: bootstrap.teamId }, `applied the ${initManifests.length} manifests of ${config.initDir}`);
    }
    const cursorKey = await cursorKeyOf(store);
    const sessions = new SessionManager(store, config.sessions, logger);
    sessions.start();
    started.push(() => {
      sessions.stop();
    });
    // The listen address is the default public URL, known once listening (port 0 picks one).
    let publicUrl = config.publicUrl;
    const oidc = config.oidc ? new OidcSignIn(config.oidc, () => `${publicUrl}/auth/callback`, cursorKey, logger) : undefined;
    oidc?.warmUp();
    const audit = new AuditLog(bus, config.eventRetentionMs, {
      directory: config.dataDir,
      failed: (err) => {
        logger.warn({ err }, 'the audit log keeps its events in memory: its scratch file in the data directory cannot be written');
      },
    });
    audit.start();
    started.push(() => {
      audit.stop();
    });
    // The agent answers "how do I …" from the OpenAPI document the API serves, known once the API is built.
    const served: { document?: () => unknown } = {};
    const agent = createAgent({ store, bus, config, logger, writer, audit, apiDocument: () => served.document?.() });
    const usage = new UsageMeter({ store, bus, config: config.usage, logger });
    usage.start();
    started.push(() => usage.stop());
    const resourceWatches = new ResourceWatches({
      store,
      settings: config.watches,
      requestLogLevel: config.requestLogLevel,
      sessionHolds: (session) => sessions.holds(session),
    });
    resourceWatches.start();
    started.push(() => {
      resourceWatches.close();
    });
    // The simulation API's faults are kept in the store's records, where every replica reads them.
    const faults = config.simulationApi ? new SimulationFaults(store.records) : undefined;
    if (faults) familyParts.simulation.useFaults(faults);
    const ctx: ApiContext = {
      config,
      store,
      bus,
      drivers,
      writer,
      quota,
      shared,
      authenticator,
      sessions,
      oidc,
      agent,
      audit,
      usage,
      cursorKey,
      watches: resourceWatches,
      faults,
      logger,
    };

    const leadership = leadershipFor(config, logger, leaderWork({ store, bus, families: familyParts, writer, quota, agent, usage, config, logger }));
    await leadership.start();
    started.push(() => leadership.stop());

    let ready = false;
    const app = await buildApp(ctx, { familyRoutes: familyParts.routes.bind(familyParts), isReady: () => ready });
    served.document = () => app.swagger();
    started.push(async () => {
      ready = false;
      await app.close();
    });
    await app.listen({ host: config.host, port: config.port }).catch((err: unknown) => {
      throw listenProblem(err, config) ?? err;
    });
    // Past listen() Fastify leaves the server's 'error' event to us: an accept() that fails
    // (EMFILE with no descriptor left) would otherwise end the process. It goes on listening.
    app.server.on('error', (err) => {
      logger.error({ err }, 'the HTTP listener could not accept a connection');
    });
    ready = true;
    const address = app.server.address();
    const port = typeof address === 'object' && address ? address.port : config.port;
    const host = config.host.includes(':') ? `[${config.host}]` : config.host;
    publicUrl ??= `http://${host}:${port}`;

    return { app, ctx, url: `http://${host}:${port}`, bootstrap, stop: stopAll };
  } catch (err) {
    await stopAll().catch((stopErr: unknown) => {
      logger.error({ err: textOf(stopErr) }, 'could not stop what had started');
    });
    throw err;
  }
}

/** A port that cannot be had, said with the settings that choose another; null for any other failure. */
function listenProblem(err: unknown, { host, port }: Config): Error | null {
  const code = fieldOf(err, 'code');
  const where = `${host}:${port}`;
  if (code === 'EADDRINUSE')
    return new Error(
      `${where} is already in use (another Cloudplane, or another program): set CLOUDPLANE_PORT to a free port (e.g. CLOUDPLANE_PORT=8081 make run), or CLOUDPLANE_HOST to another address`,
      { cause: err },
    );
  if (code === 'EACCES')
    return new Error(`${where} may not be used by this user (ports below 1024 need privileges): set CLOUDPLANE_PORT to a port above 1023`, { cause: err });
  if (code === 'EADDRNOTAVAIL')
    return new Error(`${host} is no address of this machine: set CLOUDPLANE_HOST to one of its addresses (127.0.0.1 by default)`, { cause: err });
  return null;
}

type LeaderWorkDeps = Pick<ApiContext, 'store' | 'bus' | 'writer' | 'quota' | 'config' | 'logger' | 'usage'> & {
  agent: ReturnType<typeof createAgent>;
  families: BuiltFamilies;
};

/**
 * What only the leader runs. Each term of leadership builds its parts anew, since a
 * stopped work queue or dispatcher does not start again.
 */
function leaderWork({ store, bus, families: familyParts, writer, quota, agent, usage, config, logger }: LeaderWorkDeps): LeaderCallbacks {
  let stopCurrent: (() => Promise<void>) | null = null;
  return {
    async onStartedLeading() {
      const started: Array<{ stop(): Promise<void> }> = [];
      stopCurrent = async () => {
        for (const part of started.reverse()) await part.stop();
      };
      try {
        const relay = new OutboxRelay(
          store,
          bus,
          families.map((f) => f.kind),
          logger,
          { drainDelayMs: config.outboxDrainMs },
        );
        await relay.start();
        started.push(relay);
        // Every status write while this replica leads takes the relay's published events out of the outbox.
        writer.drainPublishedWith(relay);
        started.push({
          stop: () => {
            writer.drainPublishedWith(undefined);
            return Promise.resolve();
          },
        });
        const controllers: Controller[] = [];
        for (const reconciler of buildReconcilers({ store, writer, config, quota }, familyParts.reconcilers)) {
          const controller = new Controller(store, reconciler, {
            workers: config.workersPerController,
            resyncMs: config.resyncMs,
            resyncPassesPerSecond: config.resyncPassesPerSecond,
            logger,
          });
          await controller.start();
          started.push(controller);
          controllers.push(controller);
        }
        const webhooks = new WebhookDispatcher({ store, writer, bus, config: config.webhooks, logger, usage: usage.counters });
        await webhooks.start();
        started.push(webhooks);
        const retention = new WebhookRetention({ store, config: config.webhooks, logger, writer });
        retention.start();
        started.push(retention);
        agent.start();
        started.push(agent);
        const sweeper = new RecordSweeper({
          store,
          logger,
          intervalMs: config.secrets.sweepMs,
          orphanGraceMs: config.secrets.orphanGraceMs,
          ...RECORD_SWEEP_RULES,
        });
        sweeper.start();
        started.push(sweeper);
        for (const part of usage.leaderParts()) {
          await part.start();
          started.push(part);
        }
      } catch (err) {
        await stopCurrent();
        stopCurrent = null;
        throw err;
      }
    },
    async onStoppedLeading() {
      await stopCurrent?.();
      stopCurrent = null;
    },
  };
}

function leadershipFor(config: Config, logger: Logger, work: LeaderCallbacks): Leadership {
  const leadership = electionFor(config, logger, work);
  reportLeadership(() => leadership.isLeader());
  return leadership;
}

function electionFor(config: Config, logger: Logger, work: LeaderCallbacks): Leadership {
  if (!config.kubernetes) return new SoleLeader(work);
  const { systemNamespace, leaseName, identity, leaseDurationMs } = config.kubernetes;
  return new LeaderElector({
    ...work,
    api: kubeConfigFor(config.kubernetes).makeApiClient(CoordinationV1Api),
    namespace: systemNamespace,
    name: leaseName,
    identity,
    leaseDurationMs,
    logger,
  });
}
