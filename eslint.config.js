// ESLint: typescript-eslint's strict, type-checked rules over every TypeScript file. A rule is turned off or
// relaxed only with the reason beside it. (JavaScript, not TypeScript: ESLint loads a .ts config only through
// an extra package or an unstable flag.)
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/', 'web/dist/', '.data/', 'coverage/', 'bench/results/', '**/*.d.ts'] },
  js.configs.recommended,
  {
    files: ['**/*.ts'],
    extends: [tseslint.configs.strictTypeChecked],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // tsconfig's noUncheckedIndexedAccess types every index as possibly undefined; `!` after a check the
      // compiler cannot follow (a regex group that matched, a key just set) is the project's idiom.
      '@typescript-eslint/no-non-null-assertion': 'off',
      // Numbers and booleans read fine in messages and logs; objects and nullish values stay errors.
      '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true, allowBoolean: true }],
      // `() => void promise` and `(x) => set.add(x)` shorthands are clear; a void value used otherwise is still an error.
      '@typescript-eslint/no-confusing-void-expression': ['error', { ignoreArrowShorthand: true, ignoreVoidOperator: true, ignoreVoidReturningFunctions: true }],
      // `let x: T | null = null` before branches that may assign it reads better than definite assignment.
      'no-useless-assignment': 'off',
      // Values from outside (worker reports, provider and carrier JSON, database rows) are typed as their
      // contract says and checked anyway at the boundary; the rule would have those checks removed.
      '@typescript-eslint/no-unnecessary-condition': 'off',
      // Handlers, provider methods and hooks are async by contract; some of them happen not to await.
      '@typescript-eslint/require-await': 'off',
      // Values typed by a contract (database rows, worker and provider JSON) are converted anyway at the
      // boundary: count(*) arrives from PostgreSQL as a string although a row type may say number.
      '@typescript-eslint/no-unnecessary-type-conversion': 'off',
      // String() deliberately coerces untyped JSON values (carrier, model and worker answers) for messages.
      '@typescript-eslint/no-base-to-string': 'off',
      // LiveKit enums arrive as numbers in webhook JSON (ParticipantInfo_Kind 4 = AGENT), and agents-js's
      // CloseReason is declared in both its ESM and CJS typings, so equal enums compare as different types.
      '@typescript-eslint/no-unsafe-enum-comparison': 'off',
      // The same rtc-node classes reach us through two typings (agents-js's and ours): instances look foreign.
      '@typescript-eslint/no-unsafe-class-instance-assignment': 'off',
      // A promise that relays another's rejection passes its reason on unchanged.
      '@typescript-eslint/prefer-promise-reject-errors': ['error', { allowThrowingUnknown: true }],
      // Strings spread into characters here are ASCII (keypad letters, test tokens), where code points are characters.
      '@typescript-eslint/no-misused-spread': 'off',
      // `let timer` declared before the closures that clear it and assigned after them cannot be const.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
      // A generic return type states what the caller expects of untyped JSON (`data<T>(res)`).
      '@typescript-eslint/no-unnecessary-type-parameters': 'off',
      // Unused arguments and rest siblings are kept on purpose when they start with `_`.
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', ignoreRestSiblings: true, caughtErrors: 'none' }],
    },
  },
  {
    files: ['**/*.test.ts', '**/*.test-support.ts', 'test/**/*.ts', 'bench/**/*.ts'],
    rules: {
      // Tests and benchmarks read JSON bodies (`await res.json()`, `any`) and check them with expect(); typing
      // every fixture body would add casts, not safety.
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/restrict-plus-operands': 'off',
      // A cast on a parsed JSON document states the shape the test expects of it.
      '@typescript-eslint/no-unnecessary-type-assertion': 'off',
      // `.catch((e) => e)` hands the error to expect(), which checks it.
      '@typescript-eslint/use-unknown-in-catch-callback-variable': 'off',
      // Fake servers end a request handler with `return send(res, ...)`.
      '@typescript-eslint/no-confusing-void-expression': 'off',
      // expect(obj.method).toHaveBeenCalled() and vi.fn() pass methods unbound by design.
      '@typescript-eslint/unbound-method': 'off',
      // Tests build error and track objects by hand to check how the code classifies them.
      '@typescript-eslint/no-unsafe-class-instance-assignment': 'off',
      // Tests drive the agents-js stream API the way agents-js itself still calls it (pushText).
      '@typescript-eslint/no-deprecated': 'off',
      // Fake servers take async request handlers; a failure in one fails the test through its client.
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { arguments: false } }],
    },
  },
  {
    // agents-js types tool lists and JSON-schema tool parameters as `any` (llm.FunctionTool<any, any, any>).
    files: ['media-worker/src/session/tools.ts', 'media-worker/src/session/knowledge-tool.ts', 'media-worker/src/session/agent.ts', 'media-worker/src/session/squad.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off', '@typescript-eslint/no-unsafe-assignment': 'off', '@typescript-eslint/no-unsafe-argument': 'off' },
  },
  {
    // A generator that walks Kubernetes' OpenAPI document: arbitrary JSON Schema, typed `any` on purpose.
    files: ['scripts/k8s-schemas.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
    },
  },
  {
    // Koa's ctx.state is `any` by its own typing; these files read the request's log and auth from it.
    files: ['control-plane/src/http/middleware.ts', 'control-plane/src/http/mount.ts'],
    rules: { '@typescript-eslint/no-unsafe-member-access': 'off', '@typescript-eslint/no-unsafe-call': 'off', '@typescript-eslint/no-unsafe-assignment': 'off' },
  },
  {
    // linkedom's types name DOM interfaces (lib.dom), which the server code deliberately does not load; its
    // elements are therefore typed as unresolved (or walked as `any`) here.
    files: ['control-plane/src/modules/knowledge-bases/**/*.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/restrict-plus-operands': 'off',
      '@typescript-eslint/no-unnecessary-type-assertion': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
  { linterOptions: { reportUnusedDisableDirectives: 'error' } },
);
