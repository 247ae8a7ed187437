#!/usr/bin/env node
/**
 * `cloudplane listen` on its own, until the program (src/cli/program.ts) registers it with
 * `registerListen(program)`: `node dist/src/cli/listen-main.js --forward-to URL [--events ...]`.
 */
import { Command } from 'commander';
import { registerListen } from './listen';

const program = new Command('cloudplane');
registerListen(program);
program.parseAsync(['node', 'cloudplane', 'listen', ...process.argv.slice(2)]).catch((err) => {
  process.stderr.write(`Error: ${(err as Error).message}\n`);
  process.exit(1);
});
