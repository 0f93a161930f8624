#!/usr/bin/env node
// Checked by hand before anything else loads, so an old Node fails with a sentence, not a syntax error. The minimum
// is package.json's engines.node (">=X.Y.Z"), its one source; like the check before it, it compares major and minor.
// fs comes through getBuiltinModule where there is one (Node 20.16+): an ESM import of node:fs costs --help 2-4 ms.
const { readFileSync } = process.getBuiltinModule?.('node:fs') ?? (await import('node:fs'));
const [needMajor, needMinor] = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'))
  .engines.node.replace(/^>=\s*/, '')
  .split('.')
  .map(Number);
const [major, minor] = process.versions.node.split('.').map(Number);
if (major < needMajor || (major === needMajor && minor < needMinor)) {
  process.stderr.write(`svc-api needs Node.js ${needMajor}.${needMinor} or newer; this is ${process.versions.node}.\n`);
  process.exit(1);
}
await import('../dist/svc-api.js');
