// ESLint over changed JavaScript and TypeScript files, with a fixed set of its core rules that find bugs and code
// that runs strings (docs/sections/starter-agents.md): never the repository's own ESLint config, which can name
// plugins, that is code to run. TypeScript's types are stripped first by sucrase, which keeps every line where it
// was, so ESLint's lines are the file's. Both are vendored at build (vendor/eslint.mjs).
import { Linter, stripTypes } from './vendor/eslint.mjs';

export const ESLINT_FILES = /\.(?:[cm]?js|jsx|[cm]?ts|tsx)$/;
const TYPESCRIPT = /\.(?:[cm]?ts|tsx)$/;
const JSX = /\.(?:jsx|tsx)$/;

/** Each rule with the hint a finding carries: what to do instead. */
export const ESLINT_RULES = {
  'no-eval': 'do not evaluate strings as code: parse data (JSON.parse) or call the function itself',
  'no-implied-eval': 'pass a function to setTimeout/setInterval, never a string of code',
  'no-new-func': 'new Function(string) evaluates code: write the function instead',
  'no-script-url': 'a javascript: URL runs code: use an event handler',
  'no-cond-assign': 'an assignment in a condition: compare with === (or wrap it in extra parentheses when meant)',
  'no-constant-condition': 'the condition is always the same: check the expression',
  'no-dupe-keys': 'the later key silently replaces the earlier one',
  'no-duplicate-case': 'a second case with the same value never runs',
  'no-dupe-else-if': 'this else-if repeats an earlier condition and never runs',
  'no-self-assign': 'assigning a value to itself does nothing',
  'no-self-compare': 'comparing a value with itself: use Number.isNaN for NaN',
  'no-compare-neg-zero': 'x === -0 is also true for 0: use Object.is(x, -0)',
  'use-isnan': 'nothing equals NaN: use Number.isNaN()',
  'valid-typeof': 'typeof never returns this string: check the spelling',
  'no-unsafe-negation': 'negate the whole expression: !(a in b), !(a instanceof B)',
  'no-unsafe-finally': 'a return or throw in finally discards the try block\'s own',
  'no-unsafe-optional-chaining': 'this optional chain can be undefined where a value is required',
  'no-unreachable': 'this code never runs',
  'no-func-assign': 'reassigning a function declaration',
  'no-import-assign': 'an imported binding is read-only',
  'no-async-promise-executor': 'an async executor loses its errors: await inside the async function instead',
  'no-loss-of-precision': 'this number literal cannot be represented exactly',
  'no-fallthrough': 'this case falls through into the next: end it with break or return (or say // falls through)',
  'no-constant-binary-expression': 'one side of this expression decides it whatever the other holds (?? on a value that is never nullish, a comparison with a new object)',
  'no-sparse-arrays': 'a hole in an array literal: an extra comma?',
  'no-debugger': 'remove the debugger statement',
  'no-caller': 'arguments.caller/callee are deprecated and forbidden in strict mode',
  'no-proto': 'use Object.getPrototypeOf / Object.setPrototypeOf',
};

const CONFIG = [
  {
    // The author's own eslint-disable comments are honoured; one that disables nothing of this rule set is not news.
    linterOptions: { reportUnusedDisableDirectives: 'off' },
    languageOptions: {
      ecmaVersion: 'latest',
      sourceType: 'module',
      parserOptions: { ecmaFeatures: { jsx: true } },
      // The globals no-implied-eval and no-new-func look for: without them, setTimeout("…") would be a local name.
      globals: Object.fromEntries(['setTimeout', 'setInterval', 'setImmediate', 'execScript', 'Function', 'window', 'global', 'globalThis', 'self'].map((name) => [name, 'readonly'])),
    },
    rules: Object.fromEntries(Object.keys(ESLINT_RULES).map((rule) => [rule, 'error'])),
  },
];

export function eslintVersion() {
  return Linter.version;
}

/** The findings of one file: `{line, rule, message, fix}`, or `{line, rule: 'parse-error'}` when it cannot be read. */
export function lintFile(path, text) {
  let code = text;
  if (TYPESCRIPT.test(path)) {
    try {
      code = stripTypes(text, { transforms: JSX.test(path) ? ['typescript', 'jsx'] : ['typescript'], jsxRuntime: 'preserve', disableESTransforms: true, keepUnusedImports: true, preserveDynamicImport: true }).code;
    } catch (error) {
      return [{ line: error.loc?.line ?? 1, rule: 'parse-error', message: `TypeScript could not be read: ${error.message.split('\n')[0]}`, fix: 'check the syntax' }];
    }
  }
  const linter = new Linter({ configType: 'flat' });
  const sourceType = /\.c[jt]s$/.test(path) ? 'commonjs' : 'module';
  const config = [{ ...CONFIG[0], languageOptions: { ...CONFIG[0].languageOptions, sourceType } }];
  return linter.verify(code, config, { filename: path.replace(/\.[cm]?tsx?$/, '.js') }).map((message) =>
    message.fatal
      ? { line: message.line ?? 1, rule: 'parse-error', message: `ESLint could not parse the file: ${message.message}`, fix: 'check the syntax' }
      : { line: message.line, rule: message.ruleId, message: message.message, fix: ESLINT_RULES[message.ruleId] },
  );
}
