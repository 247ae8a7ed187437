// ESLint for src/ and bench/: typescript-eslint's strict preset that reads the types (strictTypeChecked).
// test/unit/lint.test.ts holds src/ and bench/ at zero problems; `make lint` runs it with tsc.
import tseslint from 'typescript-eslint';

export default tseslint.config({
  files: ['src/**/*.ts', 'bench/**/*.ts'],
  extends: [...tseslint.configs.strictTypeChecked],
  languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
  linterOptions: { reportUnusedDisableDirectives: 'error' },
  rules: {
    // Numbers read fine in messages (as the non-strict preset allows); anything else is converted on purpose.
    '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true }],
    // A rest sibling or an `_` name is how a field is left out of a copy on purpose.
    '@typescript-eslint/no-unused-vars': ['error', { ignoreRestSiblings: true, varsIgnorePattern: '^_', argsIgnorePattern: '^_' }],
    // Labels, annotations and contexts are maps keyed by names: deleting a key is what they are for.
    '@typescript-eslint/no-dynamic-delete': 'off',
    // The types of some runtime values lie (process.stdin.isTTY is undefined off a terminal,
    // an error's message may be anything): a String() or Boolean() there is on purpose.
    '@typescript-eslint/no-unnecessary-type-conversion': 'off',
    // Every place it finds (145) is an object literal where one of the Kubernetes client's
    // models is typed, and those are classes of data alone (no methods, no private state; its
    // serializer reads their fields by name), so a literal is an instance in all but name.
    // The rule takes no list of classes to allow, as no-misused-spread does below.
    '@typescript-eslint/no-unsafe-class-instance-assignment': 'off',
    // The Kubernetes client's models are classes of data alone (no methods; its serializer
    // reads their fields by name), so a spread copy of one loses nothing.
    '@typescript-eslint/no-misused-spread': [
      'error',
      {
        allow: [
          {
            from: 'package',
            package: '@kubernetes/client-node',
            name: ['V1CronJob', 'V1CronJobSpec', 'V1JobSpec', 'V1Lease', 'V1LeaseSpec', 'V1OwnerReference', 'V1PodTemplateSpec'],
          },
        ],
      },
    ],
  },
});
