#!/usr/bin/env node
/**
 * The command line:
 *   cloudplane [serve]                 run the service (embedded store and simulated provider by default)
 *   cloudplane team create NAME EMAIL  add a team with its owner, print the owner's first API key
 *   cloudplane state export|import|reset  the embedded state as one file, while the service is stopped (src/cli/state.ts)
 *   cloudplane vpn-agent [flags]       run a VPN gateway's tunnel and serve its status (src/cli/vpn-agent.ts)
 *   cloudplane <group> <command> ...   the API's commands and contexts (src/cli/program.ts, docs/cli.md)
 */
// Each command loads only what it runs: the API commands start in a fraction of the
// service's load time (the Kubernetes client alone takes most of a second).
import { textOf } from './lib/unknown-values';

async function serve(): Promise<void> {
  const { loadConfig } = await import('./config');
  const { createLogger } = await import('./logger');
  const { startService } = await import('./service');
  const { installLastResort } = await import('./lib/last-resort');
  const config = loadConfig();
  const logger = createLogger(config.logLevel);
  installLastResort(logger);
  // The banner is best-effort like the logs: a stdout or stderr that fails (a full disk,
  // a closed pipe) must not stop the service.
  process.stdout.on('error', () => undefined);
  process.stderr.on('error', () => undefined);
  // The signals are taken before the service starts: a SIGTERM that came before the
  // handlers (right after "listening", on a busy machine) ended the process at once,
  // without stopping the service. One that comes while it starts stops it once started.
  const starting = startService(config, logger);
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    const started = await starting.catch(() => undefined);
    await started?.stop();
    process.exit(0);
  };
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  const service = await starting;
  const lines = [
    `Cloudplane is listening on ${service.url} (API under ${service.url}/api/v1, data in ${config.dataDir})`,
    `Web console: open ${service.url}/ in a browser and sign in with an API key of your team.`,
  ];
  if (service.bootstrap && service.bootstrap.token === config.bootstrapApiKey) {
    lines.push(`First start: created team ${service.bootstrap.teamId}; it accepts the key from CLOUDPLANE_BOOTSTRAP_API_KEY.`);
  } else if (service.bootstrap) {
    lines.push(
      `First start: created team ${service.bootstrap.teamId}. Its API key, shown this once:`,
      `  ${service.bootstrap.token}`,
      `Try: curl -H "Authorization: Bearer ${service.bootstrap.token}" ${service.url}/api/v1/regions`,
    );
  }
  process.stdout.write(`${lines.join('\n')}\n`);
}

async function main(argv: string[]): Promise<void> {
  const [command = 'serve', ...rest] = argv;
  if (command === 'serve') return serve();
  if (command === 'vpn-agent') return (await import('./cli/vpn-agent')).runVpnAgent(rest);
  if (command === 'team' && rest[0] === 'create' && rest[1] && rest[2]) {
    const { loadConfig } = await import('./config');
    const { createTeamOffline } = await import('./cli/team');
    const created = await createTeamOffline(loadConfig(), rest[1], rest[2]);
    process.stdout.write(`Created team ${created.teamId} with owner ${created.userId}. API key, shown this once:\n  ${created.token}\n`);
    return;
  }
  if (command === 'state') {
    const { loadConfig } = await import('./config');
    process.exitCode = await (await import('./cli/state')).runState(loadConfig(), rest);
    return;
  }
  if (command === 'team' && rest[0] === 'create') {
    process.stderr.write('usage: cloudplane team create NAME OWNER_EMAIL\n');
    process.exit(2);
  }
  // Exit once stdout is flushed: a large answer piped to another program must arrive whole.
  process.exitCode = await (await import('./cli/program')).runCli(argv);
}

main(process.argv.slice(2)).catch((err: unknown) => {
  process.stderr.write(`cloudplane: ${textOf(err)}\n`);
  process.exit(1);
});
