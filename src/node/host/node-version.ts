// The oldest Node.js swarm-node runs on, from its one source, package.json's engines.node (">=X.Y.Z"):
// scripts/build.mjs defines SVC_NODE_ENGINES from it; unbuilt (tests importing the sources), it is read from the
// file. Like bin/swarm-node.js and scripts/install.sh, doctor compares major and minor.
import { readFileSync } from 'node:fs';

declare const SVC_NODE_ENGINES: string | undefined;

export interface NodeVersion {
  major: number;
  minor: number;
}

export function minimumNode(): NodeVersion {
  const range =
    typeof SVC_NODE_ENGINES === 'string'
      ? SVC_NODE_ENGINES
      : (JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { engines: { node: string } }).engines.node;
  const [major = 0, minor = 0] = range.replace(/^>=\s*/, '').split('.').map(Number);
  return { major, minor };
}

/** "20.18": the minimum as people read it. */
export function describeVersion(version: NodeVersion): string {
  return `${version.major}.${version.minor}`;
}

/** Whether `version` ("20.20.2", no leading v) is at least `minimum`. */
export function isAtLeast(version: string, minimum: NodeVersion): boolean {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  return major > minimum.major || (major === minimum.major && minor >= minimum.minor);
}
