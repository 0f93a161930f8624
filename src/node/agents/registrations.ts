// `register`, `unregister`, `list` (docs/operations.md "Day to day on the host"): which agents this node runs, how
// often, and under what daily cap.
import { findAgentSku } from '../../contract/agents.js';
import type { CatalogAgent } from '../../contract/own-agents.js';
import { SvcError, messageOf } from '../../contract/errors.js';
import type { SqliteDatabase } from '../../lib/sqlite.js';
import { normalizeEmail } from '../../contract/email.js';
import { formatDollars } from '../../contract/money.js';
import type { StoredJwt } from '../identity/credentials.js';
import type { NodeApi } from '../service/node-api.js';
import { findInCatalog } from '../service/catalog.js';
import type { ServiceClient } from '../service/service-client.js';
import { checkDefaultInput, type Input } from '../runs/default-input.js';
import { verifyToken } from '../identity/session.js';
import { loginCommandFor } from '../identity/sign-in-remedy.js';
import { lastRun, spendSince } from '../store/journal.js';
import { deleteRegistration, getRegistration, listRegistrations, storedDefaultInput, upsertRegistration, type Registration } from '../store/registrations.js';
import { startOfUtcDay, type Clock } from '../../lib/clock.js';
import { removeBudget, setBudget } from '../service/budgets-api.js';
import type { Schedule } from '../../contract/schedules.js';
import { applyRegistrationSchedule, refuseIntervalUnderAMinute, removeIfThere, type RegistrationSchedule } from './registration-schedule.js';

/** What a register call changes; undefined keeps the current value, null clears it. */
export interface RegistrationChange {
  agent_id: string;
  every_seconds: number | null | undefined;
  daily_cap_cents: number | null | undefined;
  /** The input runs start from (register --input); null clears it. */
  default_input?: Input | null | undefined;
}

export interface RegisterDeps {
  db: SqliteDatabase;
  client: ServiceClient;
  clock: Clock;
  jwt: StoredJwt;
  credentialsFile: string;
  /** This host as an enrolled node: the service is told it serves the agent. */
  node: ThisNode;
  /** The input_schema of the bundle this node runs for an agent when no upload is current. */
  localInputSchema: (agentId: string) => Input | undefined;
}

/** This host's enrollment and its side of the protocol. */
export interface ThisNode {
  node_id: string;
  user_id: string;
  api: NodeApi;
}

export async function registerAgent(
  deps: RegisterDeps,
  change: RegistrationChange,
): Promise<{
  created: boolean;
  registration: Registration;
  default_input: Input | null;
  agent: CatalogAgent;
  user_id: string;
  node_id: string;
  /** The schedule at the service that runs it here; null: manual runs only. */
  schedule: RegistrationSchedule | null;
}> {
  // The service must vouch for the token: registering for a user it no longer accepts would only fail later.
  const signedIn = await verifyToken({ client: deps.client, clock: deps.clock, credentialsFile: deps.credentialsFile }, deps.jwt.token);
  if (normalizeEmail(signedIn.sub) !== normalizeEmail(deps.node.user_id)) {
    throw new SvcError('forbidden', `you are signed in as ${signedIn.sub}, but this node was enrolled by ${deps.node.user_id}`, {
      remedy: `Sign in as ${deps.node.user_id} to register agents on this node: ${loginCommandFor(deps.node.user_id)}`,
    });
  }
  const agent = await findInCatalog(deps.client, change.agent_id, deps.jwt.token);
  if (change.default_input != null) {
    await checkDefaultInput({ client: deps.client, token: deps.jwt.token, localSchema: deps.localInputSchema(agent.agent_id) }, agent.agent_id, change.default_input);
  }
  const current = getRegistration(deps.db, agent.agent_id);
  const every = change.every_seconds === undefined ? (current?.every_seconds ?? null) : change.every_seconds;
  const cap = change.daily_cap_cents === undefined ? (current?.daily_cap_cents ?? null) : change.daily_cap_cents;
  refuseCapBelowOneRun(agent, every, cap);
  // An interval the daemon keeps itself (registered by an older release) stays its own until --every is given again.
  const daemonKept = current !== undefined && current.schedule_id === null && current.every_seconds !== null && change.every_seconds === undefined;
  // A new interval is the service's rule; one the daemon moved there keeps its own while it stays as it is.
  if (!daemonKept && !(current?.schedule_id != null && every === current.every_seconds)) refuseIntervalUnderAMinute(agent.agent_id, every);
  const defaultInputJson =
    change.default_input === undefined ? (current?.default_input_json ?? null) : change.default_input === null ? null : JSON.stringify(change.default_input);
  // --daily-cap is the agent's daily budget at the service (docs/api.md "Budgets"): every run of it is held to it,
  // however started; the registration keeps the figure for list and status, and the daemon for not asking for a run
  // the service would refuse.
  if (change.daily_cap_cents === null) await removeBudget(deps.client, deps.jwt.token, agent.agent_id, 'day');
  else if (change.daily_cap_cents !== undefined) await setBudget(deps.client, deps.jwt.token, agent.agent_id, 'day', change.daily_cap_cents);
  // The service first: a registration it does not know would never get a run started elsewhere. Should the local
  // write fail after it, the daemon withdraws the agent again when it next reconciles (served-agents.ts).
  await deps.node.api.serve(agent.agent_id);
  // Then its schedule, pinned here (registration-schedule.ts): kept by the service, which fires it whether or not
  // the daemon runs. Should the local write fail after it, the next register takes the same schedule up again.
  const schedule = daemonKept
    ? undefined
    : await applyRegistrationSchedule(
        { client: deps.client, token: deps.jwt.token, node_id: deps.node.node_id },
        current?.schedule_id ?? null,
        { agent_id: agent.agent_id, every_seconds: every, input: defaultInputJson === null ? null : (JSON.parse(defaultInputJson) as Input) },
      );
  const { created, registration } = upsertRegistration(
    deps.db,
    {
      agent_id: agent.agent_id,
      every_seconds: every,
      daily_cap_cents: cap,
      default_input_json: defaultInputJson,
      schedule_id: schedule?.schedule_id ?? null,
    },
    deps.clock.now(),
  );
  return {
    created,
    registration,
    default_input: storedDefaultInput(registration),
    agent,
    user_id: signedIn.sub,
    node_id: deps.node.node_id,
    schedule: schedule ?? null,
  };
}

/**
 * A schedule whose daily cap is below one run's price would never run (the service refuses each run over the budget,
 * and the daemon pauses the schedule, `paused: daily_cap`, every day): said now, before anything is stored or told.
 */
function refuseCapBelowOneRun(agent: Pick<CatalogAgent, 'agent_id' | 'price_cents'>, everySeconds: number | null, capCents: number | null): void {
  if (everySeconds === null || capCents === null || capCents >= agent.price_cents) return;
  throw new SvcError('usage', `a daily cap of ${formatDollars(capCents)} lets no run of ${agent.agent_id} through (${formatDollars(agent.price_cents)} a run): its schedule would never run`, {
    remedy: `Give a cap of one run or more (swarm-node register ${agent.agent_id} --daily-cap ${formatDollars(agent.price_cents).slice(1)}), no cap (swarm-node register ${agent.agent_id} --daily-cap none), or no schedule (swarm-node register ${agent.agent_id} --every none).`,
    extensions: { agent_id: agent.agent_id, daily_cap_cents: capCents, price_cents: agent.price_cents },
  });
}

export interface Unregistered {
  agent_id: string;
  removed: true;
  /** The service no longer routes runs of it here; false: it could not be told now, the daemon tells it later. */
  withdrawn: boolean;
  /** Why it could not be told. */
  withdraw_error?: string;
  /** Its schedule at the service (register --every), and whether it was removed with it. */
  schedule?: { schedule_id: string; removed: boolean; error?: string; remedy?: string };
}

/**
 * Removes the registration here, then withdraws the agent at the service and removes its schedule there. The local
 * removal stands whatever the service says: an unreachable service is told by the daemon when it next reconciles
 * (served-agents.ts); a schedule it could not remove skips its occurrences (no node serves the agent here) and is
 * named, with the command that removes it.
 */
export async function unregisterAgent(
  db: SqliteDatabase,
  node: ThisNode | undefined,
  agentId: string,
  schedules?: { client: ServiceClient; token: () => string },
): Promise<Unregistered> {
  const registration = getRegistration(db, agentId);
  if (registration === undefined || !deleteRegistration(db, agentId)) {
    throw new SvcError('not_found', `agent "${agentId}" is not registered on this node`, { remedy: 'See the registered agents: swarm-node list.' });
  }
  const schedule = registration.schedule_id === null ? undefined : await removeItsSchedule(registration.schedule_id, schedules);
  const withSchedule = schedule === undefined ? {} : { schedule };
  // Not an enrolled node: no service routes anything here.
  if (node === undefined) return { agent_id: agentId, removed: true, withdrawn: false, ...withSchedule };
  try {
    await node.api.withdraw(agentId);
    return { agent_id: agentId, removed: true, withdrawn: true, ...withSchedule };
  } catch (error) {
    return { agent_id: agentId, removed: true, withdrawn: false, withdraw_error: messageOf(error), ...withSchedule };
  }
}

async function removeItsSchedule(
  scheduleId: string,
  schedules: { client: ServiceClient; token: () => string } | undefined,
): Promise<NonNullable<Unregistered['schedule']>> {
  const remedy = `Remove it: swarm-node schedule rm ${scheduleId} --yes`;
  if (schedules === undefined) return { schedule_id: scheduleId, removed: false, error: 'no service to tell', remedy };
  try {
    await removeIfThere({ client: schedules.client, token: schedules.token() }, scheduleId);
    return { schedule_id: scheduleId, removed: true };
  } catch (error) {
    const signIn = error instanceof SvcError && error.remedy !== undefined && error.code !== 'forbidden' ? ` (${error.remedy})` : '';
    return { schedule_id: scheduleId, removed: false, error: messageOf(error), remedy: `${remedy}${signIn}` };
  }
}

export interface RegistrationRow {
  agent_id: string;
  name: string | undefined;
  price_cents: number | undefined;
  every_seconds: number | null;
  daily_cap_cents: number | null;
  /** The input runs start from (register --input), null for none. */
  default_input: Input | null;
  /** Cents charged since 00:00 UTC today (the day the daily cap counts). */
  spent_today_cents: number;
  /** Whose figure it is: the service's (every run of the agent), or this node's journal (its own runs). */
  spent_today_from: 'service' | 'node';
  last_run_at: string | null;
  last_run_status: string | null;
  next_run_at: string | null;
  paused_reason: string | null;
  /** Its schedule at the service (register --every); null: none, or an interval the daemon keeps itself. */
  schedule_id: string | null;
  registered_at: string;
}

/** A schedule as the service has it now: when it fires next and why it is paused. */
export type ScheduleState = Pick<Schedule, 'next_fire_at' | 'pause_reason'>;

/** What the service said, when `list` asked it: its schedules by id, and each agent's net spend today (UTC). */
export interface ServiceView {
  schedules: ReadonlyMap<string, ScheduleState>;
  spentTodayCents?: ReadonlyMap<string, number>;
}

/**
 * `list`: every registration as a row, and the start of the UTC day that "spent today" counts from. A schedule at
 * the service is shown as the service has it (its next time unknown when it was not asked). Spent today is the
 * service's figure for the agent when it was asked (every run of it, which is what the daily cap holds), else what
 * this node's journal holds of its own runs.
 */
export function registrationList(
  db: SqliteDatabase,
  nowMs: number,
  atService: ServiceView = { schedules: new Map() },
): { registrations: RegistrationRow[]; day_start: string } {
  const dayStart = startOfUtcDay(nowMs);
  const registrations = listRegistrations(db).map((registration) => {
    const sku = findAgentSku(registration.agent_id);
    const last = lastRun(db, registration.agent_id);
    return {
      agent_id: registration.agent_id,
      name: sku?.name,
      price_cents: sku?.price_cents,
      every_seconds: registration.every_seconds,
      daily_cap_cents: registration.daily_cap_cents,
      default_input: storedDefaultInput(registration),
      ...(atService.spentTodayCents === undefined
        ? { spent_today_cents: spendSince(db, registration.agent_id, dayStart).chargedCents, spent_today_from: 'node' as const }
        : { spent_today_cents: atService.spentTodayCents.get(registration.agent_id) ?? 0, spent_today_from: 'service' as const }),
      last_run_at: last === undefined ? null : new Date(last.started_at).toISOString(),
      last_run_status: last?.status ?? null,
      // An interval an earlier release kept here has none until the daemon moves it to the service at its start.
      next_run_at: registration.schedule_id === null ? null : (atService.schedules.get(registration.schedule_id)?.next_fire_at ?? null),
      paused_reason: registration.schedule_id === null ? null : (atService.schedules.get(registration.schedule_id)?.pause_reason ?? null),
      schedule_id: registration.schedule_id,
      registered_at: new Date(registration.created_at).toISOString(),
    };
  });
  return { registrations, day_start: new Date(dayStart).toISOString() };
}
