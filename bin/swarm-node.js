#!/usr/bin/env node
// Checked by hand before anything else loads, so an old Node fails with a sentence, not a syntax error. The range is
// package.json's engines.node, its one source: ">=X.Y.Z" in a checkout, "^X.Y.Z" in a release (its native addon is
// built for that major: docs/operations.md "Releases"); like the checks before it, it compares major and minor.
// fs comes through getBuiltinModule where there is one (Node 20.16+): an ESM import of node:fs costs --help 2-4 ms.
const { readFileSync } = process.getBuiltinModule?.('node:fs') ?? (await import('node:fs'));
const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
const sameMajor = manifest.engines.node.startsWith('^');
const [needMajor, needMinor] = manifest.engines.node
  .replace(/^(>=|\^)\s*/, '')
  .split('.')
  .map(Number);
const [major, minor] = process.versions.node.split('.').map(Number);
if (major < needMajor || (major === needMajor && minor < needMinor) || (sameMajor && major > needMajor)) {
  const needed = sameMajor
    ? `Node.js ${needMajor} (${needMajor}.${needMinor} or newer within ${needMajor})`
    : `Node.js ${needMajor}.${needMinor} or newer`;
  process.stderr.write(`swarm-node needs ${needed}; this is ${process.versions.node}.\n`);
  process.exit(1);
}
// `--version` alone is answered here, from the package.json the build takes the version from: loading the program
// for it cost 1.4-1.7x a bare `node -e 0` (docs/operations.md "Benchmarks"). Anything else, `--version` among other
// words included, is the program's to parse.
const args = process.argv.slice(2);
// `--help` alone likewise, from the text the build wrote by running the program (scripts/build.mjs): the program's
// help is at most 80 columns wide everywhere, so it is the same text unless a terminal is narrower than that, where
// the program wraps it to the terminal. Loading the program for it cost 1.3x a bare `node -e 0`.
const alone = args.length === 1 ? args[0] : undefined;
const help =
  (alone === '--help' || alone === '-h') && !(process.stdout.isTTY && process.stdout.columns > 0 && process.stdout.columns < 80)
    ? writtenHelp()
    : undefined;
if (alone === '--version' || alone === '-v') print(`${manifest.version}\n`);
else if (help !== undefined) print(help);
else await import('../dist/swarm-node.js');

/** Writes `text` to stdout: a reader gone before it read it (`swarm-node --help | head -1`) is no failure, as in the program. */
function print(text) {
  process.stdout.on('error', (error) => {
    if (error.code !== 'EPIPE') throw error;
    process.exit(0);
  });
  process.stdout.write(text);
}

/** dist/cli/help.txt, or undefined where the build did not write it. */
function writtenHelp() {
  try {
    return readFileSync(new URL('../dist/cli/help.txt', import.meta.url), 'utf8');
  } catch {
    return undefined;
  }
}
