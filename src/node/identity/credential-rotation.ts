// `swarm-node credential rotate` (issue 13 §1): a new node credential, the way a runner's token is reset. The
// service keeps the current one valid until the new one is first used, so an answer lost on the way, or a file
// that could not be written, locks the node out of nothing: the rotation is simply run again.
import { hostname } from 'node:os';
import { messageOf } from '../../contract/errors.js';
import { updateCredentials } from './credentials.js';
import type { ThisNode } from '../agents/registrations.js';
import { NodeApi } from '../service/node-api.js';

export interface RotatedCredential {
  node_id: string;
  credentials_file: string;
  /** The service has seen the new credential used: the old one no longer works. */
  confirmed: boolean;
  /** Why it could not be confirmed now (the daemon's next poll confirms it). */
  confirm_error?: string;
}

export async function rotateNodeCredential(node: ThisNode, credentialsFile: string, version: string): Promise<RotatedCredential> {
  const rotation = await node.api.rotateCredential();
  updateCredentials(credentialsFile, (current) => ({ ...current, node: { ...current.node!, credential: rotation.node_credential } }));
  // The first call with the new credential retires the old one: a heartbeat that asks for no work.
  try {
    await new NodeApi(node.api.client, rotation.node_credential).poll({ hostname: hostname(), version, capacity: 0, running: [], wait_seconds: 0 });
    return { node_id: rotation.node_id, credentials_file: credentialsFile, confirmed: true };
  } catch (error) {
    return { node_id: rotation.node_id, credentials_file: credentialsFile, confirmed: false, confirm_error: messageOf(error) };
  }
}
