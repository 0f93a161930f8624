// swarm-node agent upload, versions, rollback (docs/api.md "Agent upload"): the signed-in user's own versions of a
// catalog agent, through the JWT (never the node credential: uploading is the user's act, not the node's).
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { MANIFEST_FILE } from '../../contract/agent-bundle.js';
import type { AgentVersion, AgentVersionsResponse, UploadResponse } from '../../contract/agent-upload.js';
import { SvcError } from '../../contract/errors.js';
import { readBundleArchive } from '../../lib/bundle-archive.js';
import type { ServiceClient } from '../service/service-client.js';
import { packBundleDir } from './bundle-pack.js';

const versionsPath = (agentId: string): string => `/v1/swarm/agents/${encodeURIComponent(agentId)}/versions`;

/**
 * Packs `dir`, checks it by the service's own rules (so a bad bundle is named before a byte is sent), and uploads
 * it. Retried like a read: the same bytes again are the same version, never a second one.
 */
export async function uploadAgent(client: ServiceClient, token: string, dir: string): Promise<UploadResponse> {
  if (!existsSync(join(dir, MANIFEST_FILE))) {
    throw new SvcError('bundle_invalid', `${join(dir, MANIFEST_FILE)} does not exist: a bundle directory holds agent.json`, {
      remedy: `Start one there (for the agent it implements: swarm-node agents): swarm-node agent init ${dir} --agent agent_ops_monitor_004`,
    });
  }
  const archive = await packBundleDir(dir);
  const bundle = await readBundleArchive(archive);
  try {
    const response = await client.call<UploadResponse>({
      method: 'POST',
      path: versionsPath(bundle.manifest.agent_id),
      body: archive,
      headers: { 'content-type': 'application/gzip' },
      bearer: token,
      retrySafe: true,
    });
    return response.body;
  } catch (error) {
    if (!(error instanceof SvcError) || error.code !== 'upload_quota_exceeded') throw error;
    throw error.withRemedy(await roomFor(client, token, bundle.manifest.agent_id));
  }
}

/**
 * Over the quota: the command that makes room, with the version it removes named (the service's remedy cannot
 * name one): the oldest version of this agent that is not current; else its current one, once none is current.
 */
async function roomFor(client: ServiceClient, token: string, agentId: string): Promise<string> {
  const { versions, current } = await agentVersions(client, token, agentId);
  const oldest = versions.filter((version) => version.digest !== current?.digest).at(-1);
  if (oldest !== undefined) return `Remove a version you no longer need, then upload again; the oldest of ${agentId}: swarm-node agent remove ${agentId} ${oldest.version} --yes`;
  if (current !== null) {
    return `Your one version of ${agentId} is current: make none current (swarm-node agent rollback ${agentId} --builtin), remove it (swarm-node agent remove ${agentId} ${current.version} --yes), then upload again.`;
  }
  return `Your stored versions are of other agents: remove those you no longer need (how: swarm-node agent remove --help), then upload again.`;
}

export async function agentVersions(client: ServiceClient, token: string, agentId: string): Promise<AgentVersionsResponse> {
  return (await client.call<AgentVersionsResponse>({ method: 'GET', path: versionsPath(agentId), bearer: token, retrySafe: true })).body;
}

/**
 * Makes an uploaded version current again: `to` names it by version, digest, or a digest's first 7+ digits; without
 * `to`, the version uploaded just before the current one (npm's and Heroku's "rollback": one step back).
 */
export async function rollbackAgent(client: ServiceClient, token: string, agentId: string, to: string | undefined): Promise<AgentVersionsResponse & { previous: AgentVersion | null }> {
  const listing = await agentVersions(client, token, agentId);
  const target = to === undefined ? stepBack(listing) : findVersion(listing, to);
  const response = await client.call<AgentVersionsResponse>({
    method: 'PUT',
    path: `/v1/swarm/agents/${encodeURIComponent(agentId)}/current`,
    body: { digest: target.digest },
    bearer: token,
    retrySafe: true,
  });
  return { ...response.body, previous: listing.current };
}

/** No upload current any more: runs accepted from then on use the built-in agent. Nothing is deleted. */
export async function useBuiltInAgent(client: ServiceClient, token: string, agentId: string): Promise<AgentVersionsResponse & { previous: AgentVersion | null }> {
  const response = await client.call<AgentVersionsResponse>({ method: 'DELETE', path: `/v1/swarm/agents/${encodeURIComponent(agentId)}/current`, bearer: token, retrySafe: true });
  return { ...response.body, previous: null };
}

/** The version `to` names (its version, digest, or 7+ first digits), as the service lists it: what `remove` removes. */
export async function versionToRemove(client: ServiceClient, token: string, agentId: string, to: string): Promise<AgentVersion> {
  return findVersion(await agentVersions(client, token, agentId), to);
}

/**
 * Removes one uploaded version, freeing its room in the upload quota. Not retried: a repeat after a lost answer
 * would say the version is gone (404), which it is.
 */
export async function removeAgentVersion(client: ServiceClient, token: string, version: AgentVersion): Promise<AgentVersionsResponse & { removed: AgentVersion }> {
  const response = await client.call<AgentVersionsResponse>({
    method: 'DELETE',
    path: `${versionsPath(version.agent_id)}/${encodeURIComponent(version.version)}`,
    bearer: token,
    retrySafe: false,
  });
  return { ...response.body, removed: version };
}

function stepBack(listing: AgentVersionsResponse): AgentVersion {
  const { current, versions, agent_id } = listing;
  if (current === null) throw new SvcError('not_found', `no version of ${agent_id} is current: your runs use the built-in agent`, { remedy: `Start one (swarm-node agent init ./${agent_id} --agent ${agent_id}), then upload it (swarm-node agent upload ./${agent_id}).` });
  const index = versions.findIndex((version) => version.digest === current.digest);
  const before = versions[index + 1];
  if (before === undefined) {
    throw new SvcError('not_found', `${agent_id} version ${current.version} is the oldest you uploaded; there is none before it`, {
      remedy: `Name one with --to; yours: swarm-node agent versions ${agent_id}.`,
    });
  }
  return before;
}

function findVersion(listing: AgentVersionsResponse, to: string): AgentVersion {
  const byName = listing.versions.find((version) => version.version === to || version.digest === to);
  if (byName !== undefined) return byName;
  const byPrefix = /^[0-9a-f]{7,63}$/.test(to) ? listing.versions.filter((version) => version.digest.startsWith(to)) : [];
  if (byPrefix.length === 1) return byPrefix[0]!;
  throw new SvcError(byPrefix.length > 1 ? 'usage' : 'not_found', byPrefix.length > 1 ? `${to} starts more than one digest; give more of it` : `you have no version ${to} of ${listing.agent_id}`, {
    remedy: `List yours: swarm-node agent versions ${listing.agent_id}.`,
  });
}

