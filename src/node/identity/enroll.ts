// `swarm-node enroll` and the wizard on a bare host (issue 13 §1, §5): make this home an enrolled node without
// installing it under /opt (a developer's machine, a node run from a user's home). The deploy token comes from
// activation (a file, or SVC_DEPLOY_TOKEN), or, for a signed-in user, from the service for one more node of theirs,
// the way a runner's registration token comes from the API. The node credential it gets is kept 0600.
import { SvcError } from '../../contract/errors.js';
import type { Clock } from '../../lib/clock.js';
import type { StoredJwt } from './credentials.js';
import { requestDeployToken } from '../service/fleet.js';
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
export async function enrollHere(deps: EnrollHereDeps, proof: EnrollProof | undefined): Promise<EnrolledHere> {
  const stored = readStoredCredentials(deps.paths);
  if (stored.node?.credential !== undefined) {
    throw new SvcError('usage', `this home is enrolled already, as node ${stored.node.node_id}`, {
      remedy: 'A new credential for it: swarm-node credential rotate. Another node: another home (SWARM_NODE_HOME) or host.',
      extensions: { node_id: stored.node.node_id },
    });
  }
  if (proof === undefined) {
    throw new SvcError('not_signed_in', 'no deploy token was given, and this home is not signed in', {
      remedy: 'Pass the deploy token from activation (--deploy-token-file <file>, or SVC_DEPLOY_TOKEN), or sign in (swarm-node login) and enroll again: the service then gives this node its deploy token.',
    });
  }
  const token =
    'deployToken' in proof ? deployTokenToEnroll(deps.paths, proof.deployToken, false) : (await requestDeployToken(deps.client, proof.jwt.token)).deploy_token;
  const enrollment = await enrollNode((deployToken) => deps.client.enroll(deployToken), token, () => new Date(deps.clock.now()));
  persistEnrollment(deps.paths, stored, enrollment);
  return {
    node_id: enrollment.node_id,
    user_id: enrollment.user_id,
    tier_id: enrollment.tier_id,
    credentials_file: deps.paths.credentialsFile,
    deploy_token_from: 'deployToken' in proof ? 'given' : 'sign_in',
  };
}
