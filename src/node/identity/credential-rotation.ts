// `swarm-node credential rotate` (docs/api.md "Credential rotation"): a new node credential, the way a runner's token
// is reset. It takes the user's JWT from a recent sign-in, never the node credential alone, so a thief holding a
// copied node credential (or an older JWT) cannot rotate, and the owner's rotation shuts the copy out. The new
// credential is written, then used at once (a heartbeat), which retires every earlier one at the service; an answer
// lost on the way locks nothing out: the old one works until the new one is used, and the rotation is run again.
import { hostname } from 'node:os';
import { messageOf } from '../../contract/errors.js';
import type { ServiceClient } from '../service/service-client.js';
import { replaceNodeCredential } from '../service/account-api.js';
import { NodeApi } from '../service/node-api.js';
import { updateCredentials } from './credentials.js';

export interface RotatedCredential {
  node_id: string;
  credentials_file: string;
  /** The service has seen the new credential used: every earlier one no longer works. */
  confirmed: boolean;
  confirm_error?: string;
}

export async function rotateNodeCredential(
  client: ServiceClient,
  token: string,
  nodeId: string,
  credentialsFile: string,
  version: string,
): Promise<RotatedCredential> {
  const rotation = await replaceNodeCredential(client, token, nodeId);
  updateCredentials(credentialsFile, (current) => ({ ...current, node: { ...current.node!, credential: rotation.node_credential } }));
  try {
    await new NodeApi(client, rotation.node_credential).poll({ hostname: hostname(), version, capacity: 0, running: [], wait_seconds: 0 });
    return { node_id: rotation.node_id, credentials_file: credentialsFile, confirmed: true };
  } catch (error) {
    return { node_id: rotation.node_id, credentials_file: credentialsFile, confirmed: false, confirm_error: messageOf(error) };
  }
}
