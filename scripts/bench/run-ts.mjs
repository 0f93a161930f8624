// Runs a TypeScript script with what the project already has (no tsx, and Node 20 cannot strip types): esbuild
// bundles it, with the src/ modules it imports, into node_modules/.cache; packages stay external and resolve from
// node_modules. Usage: node scripts/bench/run-ts.mjs <script.ts> [args…]
import { build } from 'esbuild';
import { basename, dirname, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const [entry, ...args] = process.argv.slice(2);
if (entry === undefined || !entry.endsWith('.ts')) {
  process.stderr.write('usage: node scripts/bench/run-ts.mjs <script.ts> [args…]\n');
  process.exit(2);
}
const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const source = resolve(entry);
const outfile = resolve(repoRoot, 'node_modules/.cache/svc-scripts', basename(source).replace(/\.ts$/, '.mjs'));
await build({
  entryPoints: [source],
  outfile,
  bundle: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  packages: 'external',
  sourcemap: 'inline',
  // The bundle lives elsewhere than its source: the script finds its siblings and the repository through these.
  define: { SCRIPT_DIR: JSON.stringify(dirname(source)), REPO_ROOT: JSON.stringify(repoRoot) },
  logLevel: 'warning',
});
process.argv = [process.argv[0], outfile, ...args];
await import(pathToFileURL(outfile).href);
