/**
 * The `cloudplane` command tree (commander): contexts, every API operation, completion.
 * `serve`, `team create` and `vpn-agent` are run by src/main.ts before this sees the line.
 */
import { Argument, Command, CommanderError, Option } from 'commander';
import { registerAuth } from './auth';
import { registerOperations } from './api-commands';
import { completionScript, SHELLS, Shell } from './completion';
import { CliError, EXIT, ExitCode, isExitCode } from './exit-codes';
import { OUTPUT_FORMATS } from './output';
import { parseSeconds } from './flags';
import { registerListen } from './listen';
import { registerMcp } from './mcp';
import { resolveCredentials } from './contexts';
import { textOf } from '../lib/unknown-values';
import { packageVersion } from '../lib/package-root';

const VERSION_FLAGS = ['--version', '-V'];

const SERVICE_COMMANDS = `
cloudplane --version (or -V) prints the CLI's version.

Service commands:
  serve                           Run the service (the default without a command)
  team create NAME OWNER_EMAIL    Add a team to a stopped embedded service's data directory
  vpn-agent [flags]               Run a VPN gateway's tunnel agent

Exit codes: 0 ok, 1 the API refused the request, 2 usage error, 3 not found,
4 no or refused credentials, 5 API unreachable or unavailable, 6 --wait timed out.
See docs/cli.md.`;

export function buildProgram(): Command {
  const program = new Command('cloudplane');
  program
    .description('Cloudplane: manage load balancers, VPN gateways, servers, storage, jobs, webhooks and more through the API')
    .exitOverride()
    .showHelpAfterError('(add --help for usage)')
    .addOption(new Option('--context <name>', 'Use this context of the config file instead of the current one'))
    .addOption(new Option('-o, --output <format>', 'Output format').choices(OUTPUT_FORMATS).default('table'))
    .addOption(new Option('--timeout <seconds>', 'Give up on an API request after this long').argParser(parseSeconds).default(30))
    .addHelpText('after', SERVICE_COMMANDS);

  registerAuth(program);
  registerOperations(program);
  const connection = () => {
    const { context, timeout } = program.opts<{ context?: string; timeout: number }>();
    return { ...resolveCredentials(context), timeoutMs: timeout * 1000 };
  };
  registerListen(program, connection);
  registerMcp(program, connection);

  program
    .command('completion')
    .description('Print a shell completion script: source <(cloudplane completion bash)')
    .addArgument(new Argument('<shell>', 'bash, zsh or fish').choices(Object.keys(SHELLS)))
    .action((shell: Shell) => {
      process.stdout.write(completionScript(program, shell));
    });
  return program;
}

/** Runs a command line (without `node main.js`); resolves to the exit code. Errors go to stderr, one line each. */
export async function runCli(argv: string[]): Promise<ExitCode> {
  // A reader that stopped reading (`| head`) ends the command quietly, as it does any Unix tool.
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EPIPE') process.stderr.write(`Error: cannot write the output: ${err.message}\n`);
    process.exit(err.code === 'EPIPE' ? EXIT.ok : EXIT.apiError);
  });
  // Alone on the line only: commander's own --version would also catch a command's --version (a cluster's, a database's).
  if (argv.length === 1 && VERSION_FLAGS.includes(argv[0])) {
    process.stdout.write(`${packageVersion()}\n`);
    return EXIT.ok;
  }
  const program = buildProgram();
  try {
    await program.parseAsync(argv, { from: 'user' });
    // A long-running action that reports its own failures (listen) leaves its code here; only an ExitCode is ever left.
    const code = process.exitCode ?? EXIT.ok;
    return isExitCode(code) ? code : EXIT.apiError;
  } catch (err) {
    // Commander has printed its message (or the help, asked for: exit code 0).
    if (err instanceof CommanderError) return err.exitCode === 0 ? EXIT.ok : EXIT.usage;
    if (err instanceof CliError) {
      process.stderr.write(`${err.render()}\n`);
      return err.exitCode;
    }
    process.stderr.write(`Error: ${textOf(err)}\n`);
    return EXIT.apiError;
  }
}
