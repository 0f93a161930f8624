// Which Node.js swarm-node runs on, from its one source, package.json's engines.node: ">=X.Y.Z" in a checkout
// (scripts/build.mjs defines SVC_NODE_ENGINES from it; unbuilt, tests importing the sources, it is read from the
// file), "^X.Y.Z" in a release, whose native addon is built for major X (docs/operations.md "Releases"). Like
// bin/swarm-node.js and scripts/install.sh, doctor compares major and minor.
import { readFileSync } from 'node:fs';

declare const SVC_NODE_ENGINES: string | undefined;

export interface NodeVersion {
  major: number;
  minor: number;
  /** "^X.Y.Z": no other major either (a release's addon loads in its own major only). */
  sameMajor: boolean;
}

/** The range this program was built with (a checkout's package.json). */
export function minimumNode(): NodeVersion {
  const range =
    typeof SVC_NODE_ENGINES === 'string'
      ? SVC_NODE_ENGINES
      : (JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { engines: { node: string } }).engines.node;
  const parsed = parseEngineRange(range);
  if (parsed === undefined) throw new Error(`package.json's engines.node "${range}" is not ">=X.Y.Z" or "^X.Y.Z"`);
  return parsed;
}

/** ">=20.18.1" or "^24.21.0"; undefined for anything else. */
export function parseEngineRange(range: string): NodeVersion | undefined {
  const match = /^\s*(>=|\^)\s*(\d+)\.(\d+)/.exec(range);
  if (match === null) return undefined;
  return { major: Number(match[2]), minor: Number(match[3]), sameMajor: match[1] === '^' };
}

/** "20.18 or newer", "24 (24.21 or newer within 24)": the range as people read it. */
export function describeVersion(version: NodeVersion): string {
  const floor = `${version.major}.${version.minor}`;
  return version.sameMajor ? `${version.major} (${floor} or newer within ${version.major})` : `${floor} or newer`;
}

/** Whether `version` ("20.20.2", no leading v) is in the range `wanted`. */
export function admits(wanted: NodeVersion, version: string): boolean {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  if (wanted.sameMajor && major !== wanted.major) return false;
  return major > wanted.major || (major === wanted.major && minor >= wanted.minor);
}
