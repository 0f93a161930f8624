// Which code a run executes and whether its input meets that code's input_schema (docs/api.md "Agent upload", "Input
// checked before the charge"): the user's current upload of the agent, else the built-in agent. The check is made
// before the transaction that charges, never inside it: a schema someone uploaded decides what the check costs, and
// the transaction holds the database (SQLite's one writer) while it runs. The transaction then pins the run to the
// digest that was checked, after making sure it is still the current one (VersionChangedMeanwhile otherwise).
import { runTermsOf, type RunTerms } from '../../contract/agent-bundle.js';
import { SvcError } from '../../contract/errors.js';
import {
  DeadlineExceeded,
  INPUT_CHECK_DEADLINE_MS,
  InputSchemaRefused,
  compileInputSchema,
  withInputPrefix,
  type CompiledInputSchema,
  type SchemaIssue,
} from '../../contract/input-schema.js';
import type { Clock } from '../../lib/clock.js';
import type { AgentVersions } from './agent-versions.js';
import { builtInSchema } from './builtin-schemas.js';

/** What the input was checked against, and what it fails ([] when it holds). */
export interface InputVerdict {
  agentId: string;
  /** The uploaded bundle the run would execute; null: the built-in agent. */
  digest: string | null;
  version: string;
  /** What that version's agent.json asks of its runs: their time limit, whether they may run again. */
  terms: RunTerms;
  problems: SchemaIssue[];
  /** When no input could pass: the schema itself is unusable, or too slow to check; what to do, for the agent. */
  remedy?: (agentId: string) => string;
}

/** The current version moved (an upload, a rollback) between the check and the charge: check again. */
export class VersionChangedMeanwhile extends Error {}

export interface InputChecks {
  /**
   * Before the charge: the bundle the run would execute now, and what its input_schema says of `input`. Throws
   * VersionChangedMeanwhile when the version it goes by is gone; the next call reads the current one afresh.
   */
  verdict(userId: string, agentId: string, input: unknown): Promise<InputVerdict>;
  /**
   * In the charge's transaction: the digest to pin the run to (null: built-in). Throws VersionChangedMeanwhile when
   * the current version is no longer the one checked, and 422 input_invalid when the input failed its check.
   */
  pin(verdict: InputVerdict, userId: string): Promise<string | null>;
  /** As pin, with the digest of the current version as the transaction just read it (null: built-in). */
  pinTo(verdict: InputVerdict, userId: string, currentDigest: string | null): string | null;
}

/** Compiled schemas kept, by digest: a compile costs about a millisecond, a cached check microseconds. */
const CACHED_SCHEMAS = 256;
/** Users' current versions kept, by user and agent (a digest and a label each). */
const CACHED_CURRENT = 10_000;
/**
 * A digest whose check ran out of time is refused at once for this long, without checking: a schema (and an input)
 * built to take the whole deadline at every request would otherwise cost the service that much per request, free.
 */
export const SLOW_SCHEMA_REFUSED_MS = 10 * 60_000;

export function createInputChecks(versions: AgentVersions, clock: Clock): InputChecks {
  const compiled = new Map<string, CompiledInputSchema | SchemaIssue[]>();
  const builtIns = new Map<string, CompiledInputSchema>();
  const slowUntil = new Map<string, number>();
  // What the check goes by, remembered so that an execute costs no query more than before the check left the
  // transaction: pin() reads the current version in the transaction anyway, and when the one remembered was stale
  // (an upload or rollback here or on another instance) it corrects it, and the run is checked again.
  const currentOf = new Map<string, { digest: string; version: string; terms: RunTerms } | null>();
  const remember = (userId: string, agentId: string, current: { digest: string; version: string; run_terms_json: string | null } | undefined): void => {
    const key = `${userId}\n${agentId}`;
    currentOf.delete(key);
    if (currentOf.size >= CACHED_CURRENT) currentOf.delete(currentOf.keys().next().value!);
    currentOf.set(key, current === undefined ? null : { digest: current.digest, version: current.version, terms: termsOf(current.run_terms_json) });
  };

  const uploadedSchema = async (userId: string, digest: string): Promise<CompiledInputSchema | SchemaIssue[]> => {
    let found = compiled.get(digest);
    if (found !== undefined) {
      compiled.delete(digest); // Map order is the recency order: the oldest entry goes first.
    } else {
      // Gone since it was remembered as current (removed after a rollback): the caller checks again, afresh.
      const schemaJson = await versions.schemaOf(userId, digest);
      if (schemaJson === undefined) throw new VersionChangedMeanwhile();
      try {
        found = compileInputSchema(JSON.parse(schemaJson) as Record<string, unknown>);
      } catch (error) {
        // An upload accepted under the rules of its day (a lookahead in a pattern) that Ajv and RE2 refuse now.
        if (!(error instanceof InputSchemaRefused)) throw error;
        found = error.issues;
      }
      if (compiled.size >= CACHED_SCHEMAS) compiled.delete(compiled.keys().next().value!);
    }
    compiled.set(digest, found);
    return found;
  };

  const checkUploaded = async (userId: string, digest: string, input: unknown): Promise<Pick<InputVerdict, 'problems' | 'remedy'>> => {
    const barred = slowUntil.get(digest);
    if (barred !== undefined && barred > clock.now()) return tooSlow(barred - clock.now());
    slowUntil.delete(digest);
    const schema = await uploadedSchema(userId, digest);
    const now = clock.now();
    if (Array.isArray(schema)) {
      const why = schema.map((issue) => `${issue.path || '/'}: ${issue.message}`).join('; ');
      return { problems: [{ path: '/input', message: `cannot be checked: this input_schema is not one the service can use (${why})` }], remedy: UNUSABLE_REMEDY };
    }
    // Twice before barring the digest: the deadline is wall-clock time, and a host busy elsewhere can stretch one
    // sound check past it. A schema slow by design is slow both times; one that overflows the stack always does.
    for (let attempt = 1; ; attempt += 1) {
      try {
        return { problems: withInputPrefix(schema.problems(input ?? {})) };
      } catch (error) {
        if (!(error instanceof DeadlineExceeded)) throw error;
        if (error.reason === 'timeout' && attempt === 1) continue;
        slowUntil.set(digest, now + SLOW_SCHEMA_REFUSED_MS);
        if (slowUntil.size > CACHED_SCHEMAS) slowUntil.delete(slowUntil.keys().next().value!);
        return tooSlow(SLOW_SCHEMA_REFUSED_MS);
      }
    }
  };

  const checkBuiltIn = (agentId: string, input: unknown): { version: string; terms: RunTerms; problems: SchemaIssue[] } | undefined => {
    const builtIn = builtInSchema(agentId);
    if (builtIn === undefined) return undefined;
    let schema = builtIns.get(agentId);
    if (schema === undefined) builtIns.set(agentId, (schema = compileInputSchema(builtIn.input_schema, { trusted: true })));
    return { version: builtIn.version, terms: builtIn.terms, problems: withInputPrefix(schema.problems(input ?? {})) };
  };

  return {
    async verdict(userId, agentId, input) {
      if (!currentOf.has(`${userId}\n${agentId}`)) remember(userId, agentId, await versions.current(userId, agentId));
      const current = currentOf.get(`${userId}\n${agentId}`)!;
      if (current === null) {
        const builtIn = checkBuiltIn(agentId, input);
        return { agentId, digest: null, version: builtIn?.version ?? 'unknown', terms: builtIn?.terms ?? runTermsOf({}), problems: builtIn?.problems ?? [] };
      }
      try {
        return { agentId, digest: current.digest, version: current.version, terms: current.terms, ...(await checkUploaded(userId, current.digest, input)) };
      } catch (error) {
        if (error instanceof VersionChangedMeanwhile) currentOf.delete(`${userId}\n${agentId}`);
        throw error;
      }
    },

    async pin(verdict, userId) {
      const current = await versions.current(userId, verdict.agentId);
      if ((current?.digest ?? null) !== verdict.digest) {
        remember(userId, verdict.agentId, current);
        throw new VersionChangedMeanwhile();
      }
      return refuseProblems(verdict);
    },

    pinTo(verdict, userId, currentDigest) {
      if (currentDigest !== verdict.digest) {
        // The next check reads the current version afresh.
        currentOf.delete(`${userId}\n${verdict.agentId}`);
        throw new VersionChangedMeanwhile();
      }
      return refuseProblems(verdict);
    },
  };
}

/** The digest to pin the run to, or 422 input_invalid when the input failed its check. */
function refuseProblems(verdict: InputVerdict): string | null {
  const first = verdict.problems[0];
  if (first === undefined) return verdict.digest;
  const whose = verdict.digest === null ? `the built-in ${verdict.agentId} version ${verdict.version}` : `your ${verdict.agentId} version ${verdict.version}`;
  throw new SvcError('input_invalid', `${first.path}: ${first.message} (the input_schema of ${whose}); nothing was charged`, {
    ...(verdict.remedy === undefined ? {} : { remedy: verdict.remedy(verdict.agentId) }),
    extensions: { errors: verdict.problems, agent_id: verdict.agentId, version: verdict.version, digest: verdict.digest },
  });
}

/** A version uploaded before agent.json declared run terms runs by the defaults. */
function termsOf(json: string | null): RunTerms {
  // RunTerms' fields are agent.json's, so runTermsOf reads a stored one too, filling in what an older one lacks.
  return runTermsOf(json === null ? {} : (JSON.parse(json) as Partial<RunTerms>));
}

const UNUSABLE_REMEDY = (agentId: string): string =>
  `Upload a version whose input_schema the service accepts (swarm-node agent upload checks it first), or make another version current (swarm-node agent rollback ${agentId}); nothing was charged.`;

function tooSlow(forMs: number): Pick<InputVerdict, 'problems' | 'remedy'> {
  return {
    problems: [
      {
        path: '/input',
        message: `cannot be checked within ${INPUT_CHECK_DEADLINE_MS} ms against this input_schema: runs of this version are refused for ${Math.ceil(forMs / 60_000)} more minute(s)`,
      },
    ],
    remedy: (agentId) =>
      `Upload a version with a simpler input_schema (fewer patterns, alternatives or references) or a smaller input, or make another version current (swarm-node agent rollback ${agentId}); nothing was charged.`,
  };
}
