// Which secrets a run's node is handed (docs/api.md "Secrets"): the values of the names the run's version declares
// in its agent.json (its pinned upload's, else the built-in agent's), of those the user has, read when the run is
// handed to a node, so a value changed while the run waited is the new one. Most runs declare none and cost no query.
import type { RunSecrets } from '../../contract/secrets.js';
import { runTermsOf, type RunTerms } from '../../contract/agent-bundle.js';
import { builtInSchema } from '../agents/builtin-schemas.js';
import type { Store } from '../store/store.js';
import type { SecretStore } from './secret-store.js';

export type SecretsOfRun = (run: { user_id: string; agent_id: string; bundle_digest: string | null }) => Promise<RunSecrets | undefined>;

/** Names declared per uploaded bundle: a digest names its bytes, so its agent.json (and its names) never change. */
const MAX_REMEMBERED_DIGESTS = 4096;

/**
 * A value sealed with a key no longer in the ring is left out (the agent finds its variable unset); the re-seal sweep
 * logs how many such values there are (vault/reseal.ts).
 */
export function createSecretsOfRun(store: Store, secrets: SecretStore): SecretsOfRun {
  const namesByDigest = new Map<string, readonly string[]>();
  const declaredBy = async (run: { user_id: string; agent_id: string; bundle_digest: string | null }): Promise<readonly string[]> => {
    if (run.bundle_digest === null) return builtInSchema(run.agent_id)?.terms.secrets ?? [];
    const known = namesByDigest.get(run.bundle_digest);
    if (known !== undefined) return known;
    const row = await store.db
      .selectFrom('agent_versions')
      .select('run_terms_json')
      .where('user_id', '=', run.user_id)
      .where('agent_id', '=', run.agent_id)
      .where('digest', '=', run.bundle_digest)
      .executeTakeFirst();
    const names = runTermsOf(row?.run_terms_json == null ? {} : (JSON.parse(row.run_terms_json) as Partial<RunTerms>)).secrets;
    if (namesByDigest.size >= MAX_REMEMBERED_DIGESTS) namesByDigest.delete(namesByDigest.keys().next().value!);
    namesByDigest.set(run.bundle_digest, names);
    return names;
  };
  return async (run) => {
    const names = await declaredBy(run);
    if (names.length === 0) return undefined;
    // None of them set (a built-in agent's optional model secrets): nothing to hand over, as for none declared.
    const values = await secrets.valuesOf(run.user_id, names);
    return Object.keys(values).length === 0 ? undefined : values;
  };
}
