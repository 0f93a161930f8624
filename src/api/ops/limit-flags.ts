// svc-api's flags for what one client may cost the service (docs/api.md "Conventions", "Agent upload"): slow bodies,
// idle connections, connections per address, the upload quota, rate and retention, the artifact quota and idle time.
// Parsed here, apart from main.ts, into the options startService takes; a wrong value is a usage error naming the flag.
import { ARTIFACT_MIN_BYTES_PER_SECOND } from '../../contract/artifacts.js';
import type { ServiceOptions } from '../server.js';
import { parseStaleNodeAfter } from './env-config.js';

export const LIMIT_FLAGS = {
  'body-idle-seconds': { type: 'string' },
  'body-min-rate': { type: 'string' },
  'headers-timeout-seconds': { type: 'string' },
  'keep-alive-seconds': { type: 'string' },
  'max-connections-per-address': { type: 'string' },
  'upload-quota-mib': { type: 'string' },
  'upload-quota-versions': { type: 'string' },
  'uploads-per-hour': { type: 'string' },
  'version-retention': { type: 'string' },
  'sign-in-codes-per-client': { type: 'string' },
  'artifact-quota-mib': { type: 'string' },
  'artifact-idle-seconds': { type: 'string' },
} as const;

export type LimitOptions = Pick<
  ServiceOptions,
  | 'bodyTimeout'
  | 'connectionTimeouts'
  | 'maxConnectionsPerAddress'
  | 'uploadQuota'
  | 'uploadsPerHour'
  | 'versionRetentionMs'
  | 'signInCodesPerClient'
  | 'artifactLimits'
>;

/** The options the given flags set (the others keep startService's defaults); throws with the flag's name. */
export function parseLimitFlags(values: Partial<Record<keyof typeof LIMIT_FLAGS, string>>): LimitOptions {
  const whole = (flag: keyof typeof LIMIT_FLAGS, min: number, max: number): number | undefined => {
    const text = values[flag];
    if (text === undefined) return undefined;
    if (!/^\d+$/.test(text) || Number(text) < min || Number(text) > max)
      throw new Error(`--${flag} must be a whole number from ${min} to ${max}`);
    return Number(text);
  };
  const idleSeconds = whole('body-idle-seconds', 1, 3600);
  const minRate = whole('body-min-rate', 0, 1_000_000_000);
  const headersSeconds = whole('headers-timeout-seconds', 1, 3600);
  const keepAliveSeconds = whole('keep-alive-seconds', 1, 3600);
  const connections = whole('max-connections-per-address', 0, 1_000_000);
  const quotaMib = whole('upload-quota-mib', 0, 1_048_576);
  const quotaVersions = whole('upload-quota-versions', 0, 1_000_000);
  const uploadsPerHour = whole('uploads-per-hour', 0, 1_000_000);
  const codesPerClient = whole('sign-in-codes-per-client', 1, 1_000_000);
  const artifactQuotaMib = whole('artifact-quota-mib', 0, 1_048_576);
  const artifactIdleSeconds = whole('artifact-idle-seconds', 1, 3600);
  let retentionMs: number | undefined;
  try {
    if (values['version-retention'] !== undefined) retentionMs = parseStaleNodeAfter(values['version-retention']);
  } catch (error) {
    throw new Error(`--version-retention ${(error as Error).message}`);
  }
  return {
    bodyTimeout: {
      ...(idleSeconds === undefined ? {} : { idleMs: idleSeconds * 1000 }),
      ...(minRate === undefined ? {} : { minBytesPerSecond: minRate }),
    },
    connectionTimeouts: {
      ...(headersSeconds === undefined ? {} : { headersMs: headersSeconds * 1000 }),
      ...(keepAliveSeconds === undefined ? {} : { keepAliveMs: keepAliveSeconds * 1000 }),
    },
    uploadQuota: {
      ...(quotaMib === undefined ? {} : { maxBytes: quotaMib * 1024 * 1024 }),
      ...(quotaVersions === undefined ? {} : { maxVersions: quotaVersions }),
    },
    ...(connections === undefined ? {} : { maxConnectionsPerAddress: connections }),
    ...(uploadsPerHour === undefined ? {} : { uploadsPerHour }),
    ...(codesPerClient === undefined ? {} : { signInCodesPerClient: codesPerClient }),
    ...(retentionMs === undefined ? {} : { versionRetentionMs: retentionMs }),
    artifactLimits: {
      ...(artifactQuotaMib === undefined ? {} : { maxUserBytes: artifactQuotaMib * 1024 * 1024 }),
      // The rate stays the contract's: the node sizes its transfers by it.
      ...(artifactIdleSeconds === undefined
        ? {}
        : { bodyTimeout: { idleMs: artifactIdleSeconds * 1000, minBytesPerSecond: ARTIFACT_MIN_BYTES_PER_SECOND } }),
    },
  };
}
