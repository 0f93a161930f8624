// The shape of the source (issue 12): no file in src/ over 300 lines, and no import cycle, so each module can be
// read, tested and moved on its own. Imports are read from the text: relative `import … from`, `export … from`,
// `import '…'` and `import('…')` with a literal. Type-only imports count too: a cycle of types is still two modules
// that cannot be understood one without the other, and it turns into a runtime cycle with the first value import.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = fileURLToPath(new URL('../src/', import.meta.url));
const MAX_LINES = 300;

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

  // STYLE.md 11: inside a layer, folders by concern; a layer's root holds its entry points only. src/node's root once
  // held 28 loose files (credentials beside run-errors beside service-client), so a newcomer could not tell where one
  // belonged; src/api's root holds its program and app entry points and nothing else loose.
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
