// `swarm-node enroll` and the wizard on a bare host (docs/api.md "The node's client: decisions"): make this home an
// enrolled node without installing it under /opt (a developer's machine, a node run from a user's home). The deploy
// token comes from activation (a file, or SVC_DEPLOY_TOKEN), or, for a signed-in user, from the service for one more
// node of theirs, the way a runner's registration token comes from the API. The node credential it gets is kept 0600.
import { SvcError } from '../../contract/errors.js';
import type { Clock } from '../../lib/clock.js';
import type { NodeEnrollment, StoredJwt } from './credentials.js';
import { requestDeployToken } from '../service/fleet.js';
import { NodeApi } from '../service/node-api.js';
import { deployTokenToEnroll, enrollNode, persistEnrollment, readStoredCredentials } from '../install/enrollment.js';
import type { NodePaths } from '../host/location.js';
import type { ServiceClient } from '../service/service-client.js';

export interface EnrollHereDeps {
  client: ServiceClient;
  clock: Clock;
  paths: NodePaths;
}

export interface EnrolledHere {
  node_id: string;
  user_id: string;
  tier_id: string;
  credentials_file: string;
  /** Where the deploy token came from. */
  deploy_token_from: 'given' | 'sign_in';
}

/** A deploy token given (from activation), or else one asked for with the signed-in user's JWT. */
export type EnrollProof = { deployToken: string } | { jwt: StoredJwt };

/**
 * `proof` undefined: neither a deploy token nor a sign-in. Refused here, after the enrolled-already check, so an
 * enrolled home (signed out) is told it is a node already rather than to sign in for nothing.
 */
export async function enrollHere(
  deps: EnrollHereDeps,
  proof: EnrollProof | undefined,
  options: { reenroll?: boolean } = {},
): Promise<EnrolledHere> {
  const stored = readStoredCredentials(deps.paths);
  if (stored.node !== undefined && options.reenroll === true) await assertEnrollmentRetired(deps.client, stored.node);
  else if (stored.node?.credential !== undefined) {
    throw new SvcError('usage', `this home is enrolled already, as node ${stored.node.node_id}`, {
      remedy:
        'A new credential for it: swarm-node credential rotate. Another node: another home (SWARM_NODE_HOME) or host. A node the service removed: swarm-node enroll --reenroll.',
      extensions: { node_id: stored.node.node_id },
    });
  }
  if (proof === undefined) {
    throw new SvcError('not_signed_in', 'no deploy token was given, and this home is not signed in', {
      remedy:
        'Sign in (swarm-node login), then enroll again: signed in, the service gives this node its deploy token. Or give the one from activation, in a file named with --deploy-token-file or in SVC_DEPLOY_TOKEN.',
    });
  }
  const token =
    'deployToken' in proof
      ? deployTokenToEnroll(deps.paths, proof.deployToken, false)
      : (await requestDeployToken(deps.client, proof.jwt.token)).deploy_token;
  const enrollment = await enrollNode(
    (deployToken) => deps.client.enroll(deployToken),
    token,
    () => new Date(deps.clock.now()),
  );
  persistEnrollment(deps.paths, stored, enrollment);
  return {
    node_id: enrollment.node_id,
    user_id: enrollment.user_id,
    tier_id: enrollment.tier_id,
    credentials_file: deps.paths.credentialsFile,
    deploy_token_from: 'deployToken' in proof ? 'given' : 'sign_in',
  };
}

/**
 * `enroll --reenroll`, `install --reenroll`: the stored enrollment is replaced only when the service no longer
 * accepts its credential (the node was removed: 410; its credential is unknown: 401), never a node that still
 * works: that one is the user's to remove first, on purpose.
 */
export async function assertEnrollmentRetired(client: ServiceClient, node: NodeEnrollment): Promise<void> {
  if (node.credential === undefined) return;
  try {
    await new NodeApi(client, node.credential).served();
  } catch (error) {
    if (error instanceof SvcError && (error.code === 'node_removed' || error.code === 'unauthorized')) return;
    throw error;
  }
  throw new SvcError(
    'usage',
    `node ${node.node_id} is still one of your nodes (the service accepts its credential); --reenroll replaces only an enrollment the service no longer accepts`,
    {
      remedy: `To replace it on purpose, remove it first (swarm-node nodes remove ${node.node_id}), then enroll again.`,
      extensions: { node_id: node.node_id },
    },
  );
}
