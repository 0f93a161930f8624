// Bundles both programs with esbuild. Code splitting keeps each command's heavy modules in chunks that load
// only when that command runs, so `swarm-node --help` stays near bare Node start. better-sqlite3 stays
// external: it is a native addon. The createRequire banner lets bundled CommonJS modules call require().
import { build } from 'esbuild';
import { readFile, rm } from 'node:fs/promises';

const { version } = JSON.parse(await readFile(new URL('../package.json', import.meta.url), 'utf8'));

await rm(new URL('../dist/', import.meta.url), { recursive: true, force: true });
await build({
  entryPoints: { 'swarm-node': 'src/cli/main.ts', 'svc-api': 'src/api/main.ts' },
  outdir: 'dist',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  sourcemap: true,
  minify: true,
  keepNames: true,
  chunkNames: 'chunks/[name]-[hash]',
  external: ['better-sqlite3'],
  banner: {
    js: "import { createRequire as __svcCreateRequire } from 'node:module'; const require = __svcCreateRequire(import.meta.url);",
  },
  define: { SVC_VERSION: JSON.stringify(version) },
  logLevel: 'warning',
});
