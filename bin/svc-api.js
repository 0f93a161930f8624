#!/usr/bin/env node
// Checked by hand before anything else loads, so an old Node fails with a sentence, not a syntax error.
const [major, minor] = process.versions.node.split('.').map(Number);
if (major < 20 || (major === 20 && minor < 18)) {
  process.stderr.write(`svc-api needs Node.js 20.18 or newer; this is ${process.versions.node}.\n`);
  process.exit(1);
}
await import('../dist/svc-api.js');
