// Wizard step b: runs execute on a node (docs/decisions/0011-agents-run-on-the-node.md), so a bare host becomes one
// of the signed-in user's nodes before its first run: the JWT asks the service for a deploy token, and enrollment
// gives this home its own credential. A host enrolled already stays as it is, but only for its own user: the runs it
// starts are charged to the user who enrolled it.
import { normalizeEmail } from '../../contract/email.js';
import { SvcError } from '../../contract/errors.js';
import { readCredentials, type StoredJwt } from '../identity/credentials.js';
import type { EnrolledHere } from '../identity/enroll.js';
import type { WizardQuestions } from './questions.js';
import type { WizardStepDeps } from './ui.js';

export interface WizardNode {
  node_id: string;
  /** The wizard enrolled this home now. */
  enrolled_now: boolean;
}

export async function ensureThisNode(
  deps: WizardStepDeps & { enroll: (jwt: StoredJwt) => Promise<EnrolledHere> },
  questions: Pick<WizardQuestions, 'confirmEnroll'>,
  jwt: StoredJwt,
): Promise<WizardNode> {
  const node = readCredentials(deps.credentialsFile).node;
  if (node?.credential !== undefined) {
    if (normalizeEmail(node.user_id) !== normalizeEmail(jwt.sub)) {
      throw new SvcError('forbidden', `this host is a node of ${node.user_id}, but you signed in as ${jwt.sub}`, {
        remedy: `Run the wizard as ${node.user_id} (swarm-node wizard --email ${node.user_id}), or from another home (SWARM_NODE_HOME) for ${jwt.sub}.`,
      });
    }
    return { node_id: node.node_id, enrolled_now: false };
  }
  // A host becomes a node of the user only when asked (--enroll or --yes unattended): it then runs their agents.
  if (!(await questions.confirmEnroll(jwt.sub))) {
    throw new SvcError('failed', 'not confirmed: this host was not enrolled, and nothing was run or charged', {
      remedy: 'To run agents here, enroll it (swarm-node enroll) and run the wizard again.',
    });
  }
  const enrolled = await deps.ui.spin('Enrolling this host as one of your nodes', () => deps.enroll(jwt));
  deps.ui.success(
    `Enrolled this host as node ${enrolled.node_id}: your agents run here; its credential is in ${enrolled.credentials_file} (mode 0600).`,
  );
  return { node_id: enrolled.node_id, enrolled_now: true };
}
