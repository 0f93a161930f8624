// The shape of the source (docs/architecture.md): no file in src/ over 375 lines, and no import cycle, so each
// module can be read, tested and moved on its own. Imports are read from the text: relative `import … from`,
// `export … from`, `import '…'` and `import('…')` with a literal. Type-only imports count too: a cycle of types is
// still two modules that cannot be understood one without the other, and it turns into a runtime cycle with the
// first value import.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const SRC = fileURLToPath(new URL('../src/', import.meta.url));
/**
 * What one test file could leave to the next that its worker runs in the same process (vitest.config.ts): the
 * process's environment, directory or umask changed, a module mocked.
 */
const PROCESS_WIDE =
  /process\.env(?:\.\w+|\[[^\]]+\])\s*=(?!=)|delete\s+process\.env|process\.(?:chdir|umask)\(|vi\.(?:mock|doMock|stubEnv|stubGlobal)\(|Object\.assign\(\s*process\.env/;
/**
 * A module read in one sitting: 300 lines as they were written by hand, which the formatter's wrapping (prettier,
 * 140 columns) makes about a fifth longer; when it first ran, 11 files passed 300, the longest at 367.
 */
const MAX_LINES = 375;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

const IMPORT = /(?:^|[\s;])(?:import|export)\s+(?:type\s+)?(?:[^'";]*?\s+from\s+)?['"](\.[^'"]+)['"]|import\(\s*['"](\.[^'"]+)['"]\s*\)/g;

/** The files of src/ that `file` imports, by relative specifier (`./x.js` is the source file `./x.ts`). */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const found = new Set<string>();
  for (const match of text.matchAll(IMPORT)) {
    const specifier = match[1] ?? match[2]!;
    found.add(resolve(dirname(file), specifier.replace(/\.js$/, '.ts')));
  }
  return [...found];
}

/** Strongly connected components of more than one file (or a file importing itself): Tarjan's algorithm. */
function cycles(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (node: string): void => {
    index.set(node, next);
    low.set(node, next);
    next += 1;
    stack.push(node);
    onStack.add(node);
    for (const target of graph.get(node) ?? []) {
      if (!graph.has(target)) continue;
      if (!index.has(target)) {
        visit(target);
        low.set(node, Math.min(low.get(node)!, low.get(target)!));
      } else if (onStack.has(target)) {
        low.set(node, Math.min(low.get(node)!, index.get(target)!));
      }
    }
    if (low.get(node) === index.get(node)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      if (component.length > 1 || (graph.get(node) ?? []).includes(node)) found.push(component.sort());
    }
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return found;
}

/**
 * A handler of every uncaught error that lets the process go on: it would run on in a state no code expected. An
 * error nobody handles is a bug to fix where it is thrown (docs/api.md "Conventions": no client input ends svc-api).
 */
const ADDS_LISTENER = String.raw`\bprocess\s*\.\s*(?:on|once|addListener|prependListener|prependOnceListener)\s*\(\s*`;
const KEEPS_GOING = new RegExp(`${ADDS_LISTENER}['"\`](?:uncaughtException|unhandledRejection)['"\`]|setUncaughtExceptionCaptureCallback`);

const files = sourceFiles(SRC);
const name = (file: string): string => relative(SRC, file);

describe('the source tree', () => {
  it(`has no file over ${MAX_LINES} lines`, () => {
    const long = files
      .map((file) => ({ file: name(file), lines: readFileSync(file, 'utf8').split('\n').length - 1 }))
      .filter(({ lines }) => lines > MAX_LINES);
    expect(long).toEqual([]);
  });

  // docs/architecture.md: inside a layer, folders by concern; a layer's root holds its entry points only. src/node's
  // root once held 28 loose files (credentials beside run-errors beside service-client), so a newcomer could not
  // tell where one belonged; src/api's root holds its program and app entry points and nothing else loose.
  it.each([
    ['node', 0],
    ['api', 8],
  ])('src/%s holds at most %i files at its root: the rest sit in folders by concern', (layer, most) => {
    const loose = readdirSync(join(SRC, layer)).filter((entry) => !statSync(join(SRC, layer, entry)).isDirectory());
    expect(loose.length, loose.join(', ')).toBeLessThanOrEqual(most);
  });

  it('has no import cycle in src/node, src/cli or src/api', () => {
    const graph = new Map(files.map((file) => [file, importsOf(file)]));
    expect(cycles(graph).map((component) => component.map(name))).toEqual([]);
  });

  it('has no process-wide handler of uncaught errors or rejections that keeps the process going', () => {
    expect(files.filter((file) => KEEPS_GOING.test(readFileSync(file, 'utf8'))).map(name)).toEqual([]);
    const handlers = [
      "process.on('uncaughtException', log)",
      'process.once("unhandledRejection", log)',
      'process\n  .prependListener(`uncaughtException`, log)',
      'process.setUncaughtExceptionCaptureCallback(log)',
    ];
    expect(handlers.filter((text) => !KEEPS_GOING.test(text))).toEqual([]);
    expect(KEEPS_GOING.test("process.on('SIGTERM', stop); process.on('uncaughtExceptionMonitor', record)")).toBe(false);
  });

  it('has no test that changes what the next test file in its worker would inherit (vitest.config.ts isolate)', () => {
    const tests = sourceFiles(fileURLToPath(new URL('./', import.meta.url))).filter((file) => file !== fileURLToPath(import.meta.url));
    expect(tests.length).toBeGreaterThan(100);
    expect(tests.filter((file) => PROCESS_WIDE.test(readFileSync(file, 'utf8'))).map((file) => relative(ROOT, file))).toEqual([]);
    const changes = [
      'process.env.HOME = dir',
      "process.env['PATH'] = x",
      'delete process.env.TZ',
      'process.chdir(dir)',
      'process.umask(0)',
      "vi.mock('../src/x.js')",
      "vi.stubEnv('A', 'b')",
      'Object.assign(process.env, extra)',
    ];
    expect(changes.filter((text) => !PROCESS_WIDE.test(text))).toEqual([]);
    expect(PROCESS_WIDE.test("const env = { ...process.env, HOME: dir }; if (process.env.CI === '1') skip();")).toBe(false);
  });

  it('the cycle finder finds a cycle, through a type-only or a dynamic import too', () => {
    const graph = new Map([
      ['a', ['b']],
      ['b', ['c']],
      ['c', ['a']],
      ['d', ['d']],
      ['e', ['a']],
    ]);
    expect(cycles(graph)).toEqual([['a', 'b', 'c'], ['d']]);
    const text = `import type { X } from './x.js';\nexport { y } from "./y.js";\nconst z = await import('./z.js');\nimport './side.js';\nimport { w } from 'node:fs';`;
    const specifiers = [...text.matchAll(IMPORT)].map((match) => match[1] ?? match[2]);
    expect(specifiers).toEqual(['./x.js', './y.js', './z.js', './side.js']);
  });
});

// Comments cite only what a reader of the repository can open: docs/api.md and docs/operations.md by section,
// docs/spec.md by section (`spec §N`), docs/decisions/ by file. A tracker's issue number, a design file kept
// beside the repository or a path of the machine it was written on means nothing to someone with a clone.
// Comments are found by the TypeScript parser (JavaScript and TypeScript) or by a reading of shell and systemd
// lines, so a string, a template, a regular expression or a here-document holding such words is never one.
const ROOT = fileURLToPath(new URL('../', import.meta.url));
const COMMENTED = ['src', 'test', 'scripts', 'bin', 'systemd', '.ci', 'agents'];
const SKIPPED_DIRS = new Set(['.git', 'node_modules', 'vendor', 'dist']);
const SCRIPT = /\.(?:[cm]?[jt]s)$/;
const SYSTEMD = /\.(?:service|socket|timer|path|mount)$/;

function treeFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) return SKIPPED_DIRS.has(entry) ? [] : treeFiles(path);
    return [path];
  });
}

/** A comment's text, one entry per line it spans. */
interface CommentLine {
  line: number;
  text: string;
}

/**
 * The comments of a JavaScript or TypeScript text. The parser knows where every literal is; comments live only in
 * the trivia between tokens, so the scanner reads the gaps around each node's children and the leading trivia of
 * each token, never a literal's own text.
 */
function scriptComments(text: string, fileName: string): CommentLine[] {
  const kind = /\.[cm]?ts$/.test(fileName) ? ts.ScriptKind.TS : ts.ScriptKind.JS;
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, false, kind);
  const scanner = ts.createScanner(ts.ScriptTarget.Latest, false, ts.LanguageVariant.Standard);
  const starts = new Map<number, number>();
  const trivia = (from: number, to: number): void => {
    if (to <= from) return;
    scanner.setText(text, from, to - from);
    for (let token = scanner.scan(); token !== ts.SyntaxKind.EndOfFileToken; token = scanner.scan()) {
      if (token === ts.SyntaxKind.SingleLineCommentTrivia || token === ts.SyntaxKind.MultiLineCommentTrivia) {
        starts.set(scanner.getTokenStart(), scanner.getTokenEnd());
      }
    }
  };
  const visit = (node: ts.Node): void => {
    if (ts.isTokenKind(node.kind)) {
      trivia(node.pos, node.getStart(source));
      return;
    }
    let at = node.pos;
    const child = (next: ts.Node): void => {
      trivia(at, next.pos);
      visit(next);
      at = next.end;
    };
    ts.forEachChild(node, child, (nodes) => nodes.forEach(child));
    trivia(at, node.end);
  };
  visit(source);
  trivia(source.endOfFileToken.pos, text.length);
  return [...starts].flatMap(([start, end]) => {
    const first = source.getLineAndCharacterOfPosition(start).line;
    return text
      .slice(start, end)
      .split('\n')
      .map((part, index) => ({ line: first + index + 1, text: part }));
  });
}

/** The comments of a shell script: `#` outside quotes, at a line's start or after a blank; here-documents are data. */
function shellComments(text: string): CommentLine[] {
  const found: CommentLine[] = [];
  let hereEnd: string | undefined;
  text.split('\n').forEach((content, index) => {
    if (hereEnd !== undefined) {
      if (content.replace(/^\t+/, '') === hereEnd) hereEnd = undefined;
      return;
    }
    let quote: string | undefined;
    for (let at = 0; at < content.length; at += 1) {
      const char = content[at]!;
      if (quote !== undefined) {
        if (char === quote) quote = undefined;
        else if (char === '\\' && quote === '"') at += 1;
      } else if (char === '\\') at += 1;
      else if (char === "'" || char === '"') quote = char;
      else if (char === '#' && (at === 0 || /\s/.test(content[at - 1]!))) {
        found.push({ line: index + 1, text: content.slice(at) });
        break;
      }
    }
    const here = /<<-?\s*(['"]?)(\w+)\1/.exec(content.split('#')[0]!);
    if (here !== null) hereEnd = here[2];
  });
  return found;
}

/** A systemd unit's comments: whole lines that start with `#` or `;` (systemd has no comment after a value). */
function unitComments(text: string): CommentLine[] {
  return text
    .split('\n')
    .map((content, index) => ({ line: index + 1, text: content }))
    .filter(({ text: content }) => /^\s*[#;]/.test(content));
}

const commentsRead = new Map<string, CommentLine[]>();

function commentsOf(file: string): CommentLine[] {
  let comments = commentsRead.get(file);
  if (comments === undefined) commentsRead.set(file, (comments = readComments(file)));
  return comments;
}

function readComments(file: string): CommentLine[] {
  const text = readFileSync(file, 'utf8');
  if (SCRIPT.test(file)) return scriptComments(text, file);
  if (SYSTEMD.test(file)) return unitComments(text);
  if (file.endsWith('.sh') || /^#!.*\b(?:ba|da)?sh\b/.test(text.split('\n', 1)[0]!)) return shellComments(text);
  return [];
}

const REPO_NAMES = new Set(
  [...readdirSync(ROOT), ...[...COMMENTED, 'docs'].flatMap((dir) => treeFiles(join(ROOT, dir)))].map((file) => file.split('/').pop()!),
);

/** What a comment must not cite, and why not, for the message. */
const UNOPENABLE: { pattern: RegExp; what: string }[] = [
  { pattern: /\bissues?\s+(?:#\s*)?\d+/i, what: 'an issue number' },
  // A bare number after a hash mark: not a repository's `owner/name#N`, nor a colour's three or six hex digits.
  { pattern: /(?<![\w/.@&-])#(?!(?:[\da-f]{3}|[\da-f]{6})\b)\d+\b/i, what: 'an issue number' },
  { pattern: /\.\.\/shared\b|\bshared\/(?:spec|design)\b/, what: 'a path outside the repository' },
  { pattern: /(?<![\w.-])\/work\//, what: 'a path of the machine it was written on' },
];

/** Why a comment line cites what a reader of the repository cannot open, or undefined when it does not. */
function unopenable(text: string, file: string): string | undefined {
  for (const { pattern, what } of UNOPENABLE) if (pattern.test(text)) return what;
  for (const match of text.matchAll(/(?<![\w./-])([\w-]+\.md)\b/g)) {
    if (!REPO_NAMES.has(match[1]!)) return `${match[1]}, a file the repository does not hold`;
  }
  for (const match of text.matchAll(/(?<![\w./-])(docs\/[\w./-]+\.md)\b/g)) {
    if (!existsSync(join(ROOT, match[1]!))) return `${match[1]}, a file the repository does not hold`;
  }
  for (const match of text.matchAll(/(?:^|[\s(`'"])((?:\.\.\/)+[\w.-][\w./-]*)/g)) {
    if (relative(ROOT, resolve(dirname(file), match[1]!)).startsWith('..')) return `${match[1]}, a path outside the repository`;
  }
  return undefined;
}

/** docs/spec.md's numbered sections (`## 4. Endpoints`: "4") and the numbered items of each ("1.4"). */
function specSections(text: string): Set<string> {
  const found = new Set<string>();
  let section: string | undefined;
  for (const content of text.split('\n')) {
    const heading = /^## (\d+)\. /.exec(content);
    if (heading !== null) found.add((section = heading[1]!));
    const item = /^(\d+)\. /.exec(content);
    if (item !== null && section !== undefined) found.add(`${section}.${item[1]}`);
  }
  return found;
}

describe('the comments', () => {
  const commented = COMMENTED.flatMap((dir) => treeFiles(join(ROOT, dir)));
  const where = (file: string, line: number): string => `${relative(ROOT, file)}:${line}`;

  // Each check reads a file's comments only when one of its lines, read whole, fails it: a comment is part of a line,
  // so a file none of whose lines fails holds no comment that does, and most files need no parse.
  const failing = (check: (text: string, file: string) => string[]): string[] =>
    commented.flatMap((file) => {
      if (
        !readFileSync(file, 'utf8')
          .split('\n')
          .some((text) => check(text, file).length > 0)
      )
        return [];
      const named = ({ line, text }: CommentLine): string[] =>
        check(text, file).map((why) => `${where(file, line)} names ${why}: ${text.trim()}`);
      return commentsOf(file).flatMap(named);
    });

  it('cite what the repository holds: no issue number, no file or path outside it', () => {
    expect(failing((text, file) => [unopenable(text, file)].filter((why) => why !== undefined))).toEqual([]);
  });

  // `spec §N` is docs/spec.md's section N, `spec §N.M` the item M of its numbered list; a section chained after it
  // (`, §M`, `-§M`, or at the start of the next line) too. An RFC's section (`RFC 9457 §3`) is the RFC's.
  it('cite sections of docs/spec.md that exist, and name the spec only with a section', () => {
    const sections = specSections(readFileSync(join(ROOT, 'docs', 'spec.md'), 'utf8'));
    const check = (text: string): string[] => {
      const cited = [...text.replace(/\bRFC \d+ §[\d.]+(?:(?:, | and |-)§[\d.]+)*/g, '').matchAll(/§(\d+(?:\.\d+)?)/g)];
      const missing = cited.map((match) => match[1]!).filter((section) => !sections.has(section));
      const bare = /\bthe spec\b(?!(?:'s)? §)/i.test(text) ? ['the spec without a section'] : [];
      return [...missing.map((section) => `§${section}, which docs/spec.md has not`), ...bare];
    };
    expect(failing(check)).toEqual([]);
  });

  it('are told from code: strings, templates, regular expressions and here-documents hold none', () => {
    const script = [
      "const a = '// in a string'; // one",
      'const b = `/* in a template ${"// in a hole"} */`;',
      'const c = /https?:\\/\\/x/.test(a) ? 1 : 2; /* two',
      '   three */',
      'function f() {',
      '  return 1;',
      '  // four',
      '}',
      '/** five */',
    ].join('\n');
    expect(scriptComments(script, 'x.ts')).toEqual([
      { line: 1, text: '// one' },
      { line: 3, text: '/* two' },
      { line: 4, text: '   three */' },
      { line: 7, text: '// four' },
      { line: 9, text: '/** five */' },
    ]);
    const shell = ['#!/bin/sh', 'echo "a # b" \'c # d\' # one', 'x=a#b', "cat <<'EOF'", '# data', 'EOF', '  # two'].join('\n');
    expect(shellComments(shell).map(({ line }) => line)).toEqual([1, 2, 7]);
    expect(unitComments('# one\nExecStart=/bin/true # not a comment\n; two').map(({ line }) => line)).toEqual([1, 3]);
  });

  it('the check finds what a reader cannot open, and passes what they can', () => {
    const here = join(ROOT, 'src', 'api', 'x.ts');
    const refused = [
      'issue 13 §5',
      '(issues 6 and 13)',
      'see #13',
      'DECISIONS.md "Tokens"',
      'STYLE.md pattern 5',
      '../shared/design/SYSTEMD-TESTS.md',
      'shared/spec/service-spec.md',
      '/work/main/src',
      '../../../../elsewhere',
      'docs/decisions/0099-never-written.md',
    ];
    expect(refused.filter((text) => unopenable(text, here) === undefined)).toEqual([]);
    const passed = [
      'spec §7',
      'docs/api.md "Rate limit"',
      'docs/decisions/0005-tokens.md',
      'nodejs/node#55351',
      'PKCS#8',
      '#116329',
      '../../contract/claims.ts',
      'README.md',
      'issue-token',
    ];
    expect(passed.filter((text) => unopenable(text, here) !== undefined)).toEqual([]);
  });
});
