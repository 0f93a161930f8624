// docs/operations.md "What install does, in order": enrolling this host with the deploy token from activation. The
// token is single use and never written to disk; what the service answers (the node's id and its own credential) is
// the first file written after it, so a run that stops later is finished by a re-run that needs no token.
import { chmodSync, mkdirSync } from 'node:fs';
import { SvcError } from '../../contract/errors.js';
import type { EnrollResponse } from '../../contract/schemas.js';
import { writeCredentials, type Credentials, type NodeEnrollment } from '../identity/credentials.js';
import type { NodePaths } from '../host/location.js';
import { readCredentialsIgnoringMode } from './credentials-repair.js';
import type { Change } from './plan.js';

const DEPLOY_TOKEN_PATTERN = /^[A-Za-z0-9_-]{16,512}$/;

/** The install's credentials as they are (install repairs a wrong mode, so it reads past it). */
export function readStoredCredentials(layout: Pick<NodePaths, 'credentialsFile'>): Credentials {
  const stored = readCredentialsIgnoringMode(layout.credentialsFile);
  if (stored instanceof SvcError) throw stored;
  return stored;
}

/** The token to enroll with, checked for its shape; refuses a node that has none to enroll with. */
export function deployTokenToEnroll(layout: Pick<NodePaths, 'home'>, deployToken: string | undefined, requireInstalled: boolean): string {
  if (requireInstalled) {
    throw new SvcError('usage', `no node is installed at ${layout.home}`, {
      remedy: 'Install it first, signed in (it asks the service for the deploy token): sudo swarm-node install.',
    });
  }
  if (deployToken === undefined) {
    throw new SvcError('not_signed_in', 'this node is not enrolled yet, no deploy token was given, and it is not signed in', {
      remedy:
        'Sign in (swarm-node login), then run the install again: signed in, it asks the service for the deploy token. Or give the one from activation, in a file named with --deploy-token-file or in SVC_DEPLOY_TOKEN.',
    });
  }
  const token = deployToken.trim();
  // The message never quotes the token, not even a malformed one.
  if (!DEPLOY_TOKEN_PATTERN.test(token)) {
    throw new SvcError('usage', 'the deploy token given is not a deploy token (expected the base64url string from activation)', {
      remedy: 'Put only the deploy_token that activation printed in the file, nothing else.',
    });
  }
  return token;
}

/** install --ephemeral [--uninstall-after]: what the node is enrolled as; undefined for any other node. */
export interface EphemeralEnrollment {
  uninstallAfter: boolean;
}

/** Spends the token: the service's answer, as the node keeps it. A refused token has installed nothing. */
export async function enrollNode(
  enroll: (deployToken: string) => Promise<EnrollResponse>,
  token: string,
  now: () => Date,
  ephemeral?: EphemeralEnrollment,
): Promise<NodeEnrollment> {
  try {
    const enrolled = await enroll(token);
    if (ephemeral !== undefined && enrolled.ephemeral !== true) {
      // An older service ignores the request: the node would take runs for ever. Said, not installed.
      throw new SvcError(
        'failed',
        `the service enrolled node ${enrolled.node_id} but not as ephemeral (it does not know ephemeral nodes); nothing was installed`,
        {
          remedy: `Remove it (swarm-node nodes remove ${enrolled.node_id}) and upgrade svc-api, or install without --ephemeral.`,
        },
      );
    }
    return {
      node_id: enrolled.node_id,
      user_id: enrolled.user_id,
      tier_id: enrolled.tier_id,
      enrolled_at: now().toISOString(),
      credential: enrolled.node_credential,
      ...(ephemeral === undefined ? {} : { ephemeral: true as const }),
      ...(ephemeral?.uninstallAfter === true ? { uninstall_after: true as const } : {}),
    };
  } catch (error) {
    if (error instanceof SvcError && error.code === 'deploy_token_invalid') {
      throw new SvcError('deploy_token_invalid', `the service refused the deploy token (${error.message}); nothing was installed`, {
        ...(error.remedy === undefined ? {} : { remedy: error.remedy }),
        cause: error,
      });
    }
    throw error;
  }
}

/** The first write after the token is spent: from here on, a re-run needs no token. */
export function persistEnrollment(
  layout: Pick<NodePaths, 'home' | 'etcDir' | 'credentialsFile'>,
  stored: Credentials,
  enrollment: NodeEnrollment,
): Change {
  for (const dir of [layout.home, layout.etcDir]) {
    mkdirSync(dir, { recursive: true, mode: 0o755 });
    chmodSync(dir, 0o755);
  }
  writeCredentials(layout.credentialsFile, { ...stored, node: enrollment });
  return { action: 'create', path: layout.credentialsFile, detail: `node ${enrollment.node_id}, mode 0600`, restart: false };
}
