// ESLint flat config. Formatting is Prettier's (`npm run format`); this checks what a formatter cannot.
// TypeScript files get typescript-eslint's type-aware rules (the promise rules above all); the plain
// JavaScript files (bin/, scripts/, this file) are linted without type information.
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

/** The commands that start the sandbox (`svcsync demo`, `svcsync sandbox`): the only code of src/ that may import it. */
const SANDBOX_STARTERS = ['src/cli/commands/demo.ts', 'src/cli/sandbox-command.ts'];

/**
 * A folder of src/ that may not import the folders named, nor the sandbox
 * (`no-restricted-imports`: a border the lint holds, not a comment). One block per folder:
 * a later block setting the same rule would replace this one's patterns.
 */
function layer(folder, above) {
  const patterns = [
    {
      regex: '(^|/)sandbox/',
      message: 'only `svcsync demo` and `svcsync sandbox` start the sandbox (through its entry point, sandbox/index.ts).',
    },
  ];
  if (above.length > 0) {
    patterns.push({
      regex: `(^|/)(${above.join('|')})/`,
      message:
        `${folder}/ sits below src/{${above.join(',')}}/: ` +
        'move the shared piece down, or the importing code up (docs/design.md, "Layout").',
    });
  }
  return { files: [`${folder}/**/*.ts`], rules: { 'no-restricted-imports': ['error', { patterns }] } };
}

export default tseslint.config(
  // What .gitignore lists as build output. CI's Node binaries are cached outside the tree (~/.cache/svcsync-ci).
  { ignores: ['dist/', 'coverage/', 'bench/results/'] },
  js.configs.recommended,
  {
    files: ['**/*.ts'],
    extends: [tseslint.configs.recommendedTypeChecked],
    languageOptions: {
      parserOptions: {
        projectService: {
          // vitest.config.ts is outside tsconfig.json's include list.
          allowDefaultProject: ['vitest.config.ts'],
          defaultProject: 'tsconfig.json',
        },
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      // Passing an AbortSignal's reason on (`reject(signal.reason)`, typed any) is the standard abort pattern.
      '@typescript-eslint/prefer-promise-reject-errors': ['error', { allowThrowingAny: true, allowThrowingUnknown: true }],
      // `const { id: _id, ...rest } = row` drops a field; a leading underscore marks a deliberately unused name.
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_', ignoreRestSiblings: true },
      ],
    },
  },
  {
    // A migration is frozen in time: it must mean what it meant when it was written, whatever the
    // warehouse's types say today, so it takes a `Kysely<any>` as kysely's migration docs recommend.
    files: ['migrations/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    files: ['**/*.js', '**/*.mjs'],
    languageOptions: { globals: globals.node },
  },
  {
    // The status page's script runs in the reader's browser, inlined into the page as a classic script.
    files: ['src/**/*.js'],
    languageOptions: { sourceType: 'script', globals: globals.browser },
  },
  // The layers of src/, lowest first: core; catalog; config; api and normalize; loaders; state;
  // extractors; scheduler; cli. An import runs down the list, never up (docs/design.md, "Layout").
  // No folder of src/ reaches into the sandbox but the two commands that start it.
  layer('src/core', ['catalog', 'config', 'api', 'normalize', 'loaders', 'state', 'extractors', 'scheduler', 'cli']),
  layer('src/catalog', ['config', 'api', 'normalize', 'loaders', 'state', 'extractors', 'scheduler', 'cli']),
  layer('src/config', ['api', 'normalize', 'loaders', 'state', 'extractors', 'scheduler', 'cli']),
  layer('src/api', ['loaders', 'state', 'extractors', 'scheduler', 'cli']),
  layer('src/normalize', ['api', 'loaders', 'state', 'extractors', 'scheduler', 'cli']),
  layer('src/loaders', ['api', 'state', 'extractors', 'scheduler', 'cli']),
  layer('src/state', ['extractors', 'scheduler', 'cli']),
  layer('src/extractors', ['scheduler', 'cli']),
  layer('src/scheduler', ['cli']),
  // Inside the scheduler: when to run (timing/) sits below the quota plan (planning/), which sits below
  // the operator's surface (surface/); the daemon, worker and job runner at its root compose all three.
  layer('src/scheduler/timing', ['planning', 'surface', 'cli']),
  layer('src/scheduler/planning', ['surface', 'cli']),
  { ...layer('src/cli', []), ignores: SANDBOX_STARTERS },
  {
    files: SANDBOX_STARTERS,
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ regex: '(^|/)sandbox/(?!index\\.js$)', message: 'use the sandbox through its entry point, sandbox/index.ts.' }] },
      ],
    },
  },
  // The sandbox is the API's stand-in, written from the spec on its own: a bug shared with the
  // client would hide itself. It imports only Node's built-ins and its own files.
  {
    files: ['sandbox/**/*.ts'],
    ignores: ['sandbox/test/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { regex: '^(?!node:|\\./)', message: 'the sandbox imports only Node built-ins (node:...) and its own files (./...).' },
          ],
        },
      ],
    },
  },
  {
    files: ['src/**/*.ts'],
    rules: {
      'max-lines-per-function': ['error', { max: 80, skipBlankLines: true, skipComments: true, IIFEs: true }],
      // The product speaks through its logger (levels, redaction of secrets) or the CLI's output, never a stray print.
      'no-console': 'error',
    },
  },
  {
    // Catalog data: a stream or report view is one long declaration read as a table; cutting it up would hide its shape.
    files: ['src/catalog/streams/**', 'src/catalog/report-views.ts'],
    rules: { 'max-lines-per-function': 'off' },
  },
  {
    rules: {
      'no-nested-ternary': 'error',
      // Prettier wraps code at 140; this catches what it leaves long (comments, strings).
      'max-len': ['error', { code: 140, tabWidth: 2, ignoreUrls: true, ignoreRegExpLiterals: true }],
    },
  },
);
