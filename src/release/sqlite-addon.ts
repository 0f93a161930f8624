// better-sqlite3's native addon for the Node a release ships (docs/operations.md "Releases"). The checkout's own
// addon is built for the Node that develops it, whose ABI (NODE_MODULE_VERSION) the shipped runtime does not share,
// so the release builds one with node-gyp against the headers inside the runtime package (include/node: nothing is
// downloaded), from a copy of the module's sources: the checkout's addon stays as it is. Compiling SQLite takes
// most of a minute, so the result is cached by module and runtime version (both immutable on the registry).
import { execFileSync } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { readManifest } from '../lib/package-dir.js';
import type { UnpackedRuntime } from './runtime-package.js';

/** Where the addon sits inside a package and a release. */
export const SQLITE_ADDON_PATH = 'node_modules/better-sqlite3/build/Release/better_sqlite3.node';

const BUILD_TIMEOUT_MS = 30 * 60_000;

/** The addon built for `runtime` (from the cache, else built now), checked to load and query in that runtime. */
export function sqliteAddonFor(options: {
  packageDir: string;
  runtime: UnpackedRuntime;
  platform: string;
  cacheDir: string;
  workDir: string;
  log: (line: string) => void;
}): string {
  const moduleDir = dirname(createRequire(join(options.packageDir, 'package.json')).resolve('better-sqlite3/package.json'));
  const moduleVersion = String(readManifest(join(moduleDir, 'package.json')).version);
  const cachedDir = join(options.cacheDir, `better-sqlite3-${moduleVersion}-node-${options.platform}-${options.runtime.version}`);
  const cached = join(cachedDir, 'better_sqlite3.node');
  if (!existsSync(cached)) {
    options.log(
      `building better-sqlite3 ${moduleVersion} for Node ${options.runtime.version} with node-gyp (once; cached in ${options.cacheDir})`,
    );
    const built = build(moduleDir, options.runtime, join(options.workDir, 'better-sqlite3'));
    const staging = `${cachedDir}.${process.pid}`;
    mkdirSync(staging, { recursive: true });
    copyFileSync(built, join(staging, 'better_sqlite3.node'));
    rmSync(cachedDir, { recursive: true, force: true });
    renameSync(staging, cachedDir);
  }
  checkLoads(moduleDir, cached, options.runtime);
  return cached;
}

function build(moduleDir: string, runtime: UnpackedRuntime, sourceDir: string): string {
  for (const entry of ['package.json', 'binding.gyp', 'src', 'deps'])
    cpSync(join(moduleDir, entry), join(sourceDir, entry), { recursive: true });
  // node-gyp from this checkout's devDependencies (package-lock pins it), run by the builder's Node: it only drives
  // the compiler; the target is --nodedir's headers.
  const nodeGyp = createRequire(import.meta.url).resolve('node-gyp/bin/node-gyp.js');
  try {
    execFileSync(process.execPath, [nodeGyp, 'rebuild', '--release', `--nodedir=${runtime.nodeDir}`, '--jobs=max'], {
      cwd: sourceDir,
      env: withoutNpmConfig(process.env),
      stdio: ['ignore', 'pipe', 'pipe'],
      maxBuffer: 64 << 20,
      timeout: BUILD_TIMEOUT_MS,
    });
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: Buffer; stderr?: Buffer };
    const tail = `${stdout?.toString() ?? ''}${stderr?.toString() ?? ''}`.trim().split('\n').slice(-12).join('\n');
    throw new Error(
      `node-gyp could not build better-sqlite3 for Node ${runtime.version} (it needs python3, make and g++: apt-get install python3 make g++):\n${tail}`,
    );
  }
  return join(sourceDir, 'build', 'Release', 'better_sqlite3.node');
}

/** npm passes its settings down as npm_config_*, which node-gyp reads as its own options (nodedir=/usr, target=…). */
function withoutNpmConfig(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(env).filter(([name]) => !name.toLowerCase().startsWith('npm_config_')));
}

/** Opens a database in the shipped runtime with this addon: an addon of another ABI fails here, not on a host. */
function checkLoads(moduleDir: string, addon: string, runtime: UnpackedRuntime): void {
  const script =
    "const Database = require(process.argv[1]); new Database(':memory:', { nativeBinding: process.argv[2] }).prepare('select 1').get();";
  try {
    execFileSync(runtime.binary, ['-e', script, moduleDir, addon], { stdio: ['ignore', 'ignore', 'pipe'], timeout: 60_000 });
  } catch (error) {
    const stderr = (error as { stderr?: Buffer }).stderr?.toString().trim().split('\n').slice(0, 6).join('\n');
    throw new Error(`better-sqlite3's addon ${addon} does not load in Node ${runtime.version}:\n${stderr}`);
  }
}
