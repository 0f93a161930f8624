// Bundles each program with esbuild. Code splitting keeps each command's heavy modules in chunks that load only
// when that command runs, so `swarm-node --help` stays near bare Node start. The programs are built separately so
// the CLI's start-up graph holds no chunk shaped by the server. better-sqlite3 stays external (a native addon);
// the createRequire banner lets bundled CommonJS modules call require().
import { execFileSync } from 'node:child_process';
import { build } from 'esbuild';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { buildAgentVendor } from './agent-vendor.mjs';

const { version, engines } = JSON.parse(await readFile(new URL('../package.json', import.meta.url), 'utf8'));

const common = {
  outdir: 'dist',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  sourcemap: true,
  // NO_MINIFY=1 npm run build: readable function names in a CPU profile (npm run bench:execute -- --cpu-prof DIR).
  minify: process.env.NO_MINIFY === undefined,
  external: ['better-sqlite3'],
  banner: {
    js: "import { createRequire as __svcCreateRequire } from 'node:module'; const require = __svcCreateRequire(import.meta.url);",
  },
  // package.json is the one source of the version and of the oldest Node.js we run on (engines.node).
  define: { SVC_VERSION: JSON.stringify(version), SVC_NODE_ENGINES: JSON.stringify(engines.node) },
  logLevel: 'warning',
};

await rm(new URL('../dist/', import.meta.url), { recursive: true, force: true });
await Promise.all([
  // Names are dropped in the CLI: keeping them costs 3-5 ms of every start, and it matches errors by code.
  build({ ...common, entryPoints: { 'swarm-node': 'src/cli/main.ts' }, chunkNames: 'cli/[name]-[hash]' }),
  // The service keeps class names: its logs name the error types.
  build({ ...common, entryPoints: { 'svc-api': 'src/api/main.ts' }, chunkNames: 'api/[name]-[hash]', keepNames: true }),
  // npm run release: not part of what a node runs, so not part of a release either (src/release/release-tree.ts).
  build({ ...common, entryPoints: { 'swarm-node-release': 'src/release/main.ts' }, chunkNames: 'release/[name]-[hash]' }),
  buildAgentVendor(new URL('../', import.meta.url)),
]);
// The program's own `--help`, written out for bin/swarm-node.js to print for `--help` alone without loading the
// program. Two words, so the program answers; on a pipe, so it is the 80-column text.
const bin = fileURLToPath(new URL('../bin/swarm-node.js', import.meta.url));
const help = execFileSync(process.execPath, [bin, '--no-color', '--help'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
await writeFile(new URL('../dist/cli/help.txt', import.meta.url), help);
