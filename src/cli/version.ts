// This program's version: the package.json of the package it runs from, which `npm run release -- --version V`
// writes with V (docs/operations.md "Build and sign"), so a release reports the version it was published as in the
// daemon's polls, `status` and `--version`, and auto-update compares the newest release with that one.
// scripts/build.mjs defines SVC_VERSION (package.json's at build time) for a package without a readable manifest;
// unbuilt (tests importing the sources), it is 'dev'.
import { readManifest, runningPackageDir } from '../lib/package-dir.js';

declare const SVC_VERSION: string | undefined;

export const VERSION = typeof SVC_VERSION === 'string' ? (manifestVersion() ?? SVC_VERSION) : 'dev';

function manifestVersion(): string | undefined {
  try {
    const { version } = readManifest(`${runningPackageDir(import.meta.url)}/package.json`);
    return typeof version === 'string' && version !== '' ? version : undefined;
  } catch {
    return undefined;
  }
}
