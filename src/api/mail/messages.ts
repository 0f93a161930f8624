// What the service writes to a user (docs/api.md "Mail"): plain text, short, and never a secret but the code the
// user asked for. Every notice says what happened, from where (the address and the client's family), and what to do
// if it was not them.
import { isoTime } from '../../lib/clock.js';
import { clientNameOf } from './client-name.js';
import type { MailMessage } from './mail-message.js';

/** Who did it, as the service saw the request. */
export interface ClientSeen {
  client_address: string;
  user_agent: string | null;
}

const NOT_YOU =
  'If this was not you, sign out every session (swarm-node logout --everywhere), then remove any node you do not know (swarm-node nodes remove <node_id>).';

/** The address and the client's family: never the User-Agent's text, which whoever asked wrote (client-name.ts). */
function seenFrom(client: ClientSeen): string {
  return `from ${client.client_address} (${clientNameOf(client.user_agent)})`;
}

/** `reference`: the start of the challenge's id, which the client shows too, so a person with several mails picks the right one. */
export function signInCodeMail(to: string, code: string, reference: string, minutes: number, client: ClientSeen): MailMessage {
  return {
    to,
    subject: `Your svc sign-in code: ${code}`,
    text: [
      `Your svc sign-in code is ${code}`,
      '',
      `Type it where you asked to sign in. It works once, for ${minutes} minutes.`,
      `The request came ${seenFrom(client)}, reference ${reference}.`,
      '',
      'If you did not ask for it, ignore this mail: nobody can sign in without the code.',
    ].join('\n'),
  };
}

export function newClientSignInMail(to: string, at: number, client: ClientSeen): MailMessage {
  return {
    to,
    subject: 'A new sign-in to your svc account',
    text: [`Your svc account was signed in at ${isoTime(at)} ${seenFrom(client)}, a client not seen signing in before.`, '', NOT_YOU].join(
      '\n',
    ),
  };
}

export function nodeEnrolledMail(to: string, nodeId: string, at: number, client: ClientSeen): MailMessage {
  return {
    to,
    subject: 'A node joined your svc account',
    text: [
      `A node enrolled into your svc account at ${isoTime(at)} ${seenFrom(client)}.`,
      `Its node id: ${nodeId}. Runs of your agents may now be routed to it.`,
      '',
      `If you did not install it, remove it at once: swarm-node nodes remove ${nodeId}`,
      NOT_YOU,
    ].join('\n'),
  };
}

export function agentUploadedMail(
  to: string,
  agentId: string,
  version: string,
  digest: string,
  at: number,
  client: ClientSeen,
): MailMessage {
  return {
    to,
    subject: `A new version of ${agentId} was uploaded to your svc account`,
    text: [
      `Version ${version} of ${agentId} (sha256 ${digest}) was uploaded at ${isoTime(at)} ${seenFrom(client)}.`,
      'Your next runs of this agent execute it on your nodes.',
      '',
      `If you did not upload it, go back to the built-in agent: swarm-node agent rollback ${agentId} --builtin`,
      NOT_YOU,
    ].join('\n'),
  };
}

export function credentialRotatedMail(to: string, nodeId: string, at: number, client: ClientSeen): MailMessage {
  return {
    to,
    subject: 'A node credential of your svc account was replaced',
    text: [
      `The credential of node ${nodeId} was replaced at ${isoTime(at)} ${seenFrom(client)}; every earlier credential of it stopped working.`,
      '',
      NOT_YOU,
    ].join('\n'),
  };
}
