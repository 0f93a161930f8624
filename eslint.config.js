// ESLint for the project's own code: typescript-eslint's recommended rules, without type information so that a lint
// of the whole repository takes seconds (the compiler checks types: npm run typecheck), and the few rules that catch
// what review keeps catching. The agents under agents/ are programs of their own, linted by nothing here.
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'agents/**', 'coverage/**'] },
  ...tseslint.configs.recommended,
  {
    rules: {
      // `x == null` is the one loose comparison kept: null or undefined, as the code means it.
      eqeqeq: ['error', 'always', { null: 'ignore' }],
      'no-var': 'error',
      // A closure may read a variable before its one assignment (a logger that exists only later): that stays `let`.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      // `typeof import('chalk')` names a module loaded later, on purpose (src/cli/output.ts).
      '@typescript-eslint/consistent-type-imports': ['error', { disallowTypeAnnotations: false }],
    },
  },
  {
    // A test reads the bodies it is answered as whatever they hold: `any` there is the JSON's own type.
    files: ['test/**', 'scripts/bench/**'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
);
