/**
 * Jest runs the TypeScript sources directly through swc (types are checked by `make lint`).
 * @kubernetes/client-node 1.x and a few of its dependencies ship only ES modules, which
 * Jest's CommonJS runtime on Node 20 cannot require; swc compiles those to CommonJS too.
 * @fastify/cookie loads the ESM-only `cookie` with a dynamic import(), which Jest's runtime
 * refuses without --experimental-vm-modules: compiled, it becomes a require().
 * eventsource-parser (the CLI's reader of server-sent events) ships only ES modules too.
 */
const esmOnly = [
  '@kubernetes/client-node',
  'openid-client',
  'oauth4webapi',
  'jose',
  'jsonpath-plus',
  'rfc4648',
  'content-disposition',
  '@fastify/cookie',
  'cookie',
  'eventsource-parser',
];
const swc = ['@swc/jest', { jsc: { target: 'es2022', parser: { syntax: 'typescript' } }, module: { type: 'commonjs' } }];

module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.ts$': swc, '^.+\\.m?js$': swc },
  transformIgnorePatterns: [`/node_modules/(?!(${esmOnly.join('|')})/)`],
  testTimeout: 60000,
  // Four on the CI machine's two cores: a test file keeps well under a core busy on average,
  // the rest waiting on timers, child processes and schedules, and since a service start no
  // longer compiles every route's schemas (src/api/plugins/schema-compilation.ts) three
  // workers left a quarter of the CPU idle. Measured on one machine the same day: the
  // embedded-store suite 1,024 s with three, 807 s with four; the Kubernetes-store API
  // suite 441 s and 392 s; every test passing either way.
  maxWorkers: 4,
  // No process a test starts outlives the run (test/helpers/processes.ts).
  globalSetup: '<rootDir>/test/helpers/jest-global-setup.ts',
  globalTeardown: '<rootDir>/test/helpers/jest-global-teardown.ts',
};
