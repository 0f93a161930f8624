// What the fuzz bench (./fuzz.ts) found, per engine and in all: the figures against the goals, then for each kind
// of finding how many and the first few cases, each by its index (`--only <index>` sends it again).
import type { CaseKind, FuzzCase } from './fuzz-cases.js';
import type { ProbeFindings } from './fuzz-probes.js';
import type { ErrorLine, ExitRecord } from './fuzz-service.js';
import { table } from './support.js';

export type Engine = 'sqlite' | 'postgres';

/** The run's settings the report names. */
export interface RunSettings {
  seed: number;
  requests: number;
  concurrency: number;
  idleSeconds: number;
  bodyIdleSeconds: number;
  examples: number;
}

interface Example {
  index: number;
  kind: CaseKind;
  method: string;
  target: string;
  note: string;
}

/** Findings of one kind: how many, and the first few. */
export class Findings {
  count = 0;
  readonly examples: Example[] = [];

  constructor(private readonly keep: number) {}

  add(c: FuzzCase, note: string): void {
    this.count += 1;
    if (this.examples.length < this.keep) this.examples.push({ index: c.index, kind: c.kind, method: c.method, target: c.target, note });
  }
}

export interface Resources {
  fds: number;
  rssMb: number;
}

export interface EngineReport {
  engine: Engine;
  cases: number;
  judged: number;
  lostToExit: number;
  seconds: number;
  statuses: Map<number, number>;
  kinds: Map<CaseKind, number>;
  internal: Findings;
  other5xx: Findings;
  unavailable: Findings;
  noAnswer: Findings;
  notCut: Findings;
  crossSite: Findings;
  errorLines: ErrorLine[];
  errorLineCount: number;
  warnings: number;
  otherLines: string[];
  otherLineCount: number;
  exits: ExitRecord[];
  /** Per kind of exit (what svc-api printed), the case that made it exit again when sent alone. */
  culprits: Map<string, { index: number; kind: CaseKind; method: string; target: string } | undefined>;
  before: Resources;
  peak: Resources;
  after: Resources;
  /** svc-api was started again after an exit: before and after are of different processes. */
  restarted: boolean;
  routes: number;
  reached: number;
  notReached: string[];
  probes: ProbeFindings;
  trap: { sent: number; hellos: number; connections: number; recorded: string[] };
}

/** The first line of what an exit printed, as exits are grouped by. */
export function crashKey(exit: ExitRecord): string {
  return `${exit.signal ?? exit.code}: ${exit.crash.slice(0, 160)}`;
}

const goal = (met: boolean): string => (met ? 'met' : 'MISSED');
const within = (before: number, after: number): boolean => after <= before * 1.1;
const cases = (indexes: Iterable<number>): string => [...indexes].map((index) => `#${index}`).join(' ');

function describe(example: Example): string {
  const note = example.note.replace(/\s+/g, ' ').slice(0, 220);
  return `#${example.index} ${example.kind} ${example.method.slice(0, 20)} ${example.target.slice(0, 100)} ${note}`;
}

/** Whether the figures after the idle time may be set against those before: the same process. */
function resourceGoal(r: EngineReport, before: number, after: number): string {
  return r.restarted ? 'not judged: svc-api was started again after an exit' : goal(within(before, after));
}

export function printEngine(r: EngineReport, run: RunSettings): void {
  const out: string[] = [];
  const sorted = <K>(map: Map<K, number>, by: (a: [K, number], b: [K, number]) => number): [K, number][] => [...map].sort(by);
  out.push('', `== ${r.engine}: seed ${run.seed}, ${r.cases} cases, ${run.concurrency} at once, ${r.seconds.toFixed(0)} s in all`);
  out.push(
    `cases by kind: ${sorted(r.kinds, (a, b) => b[1] - a[1])
      .map(([kind, count]) => `${kind} ${count}`)
      .join(', ')}`,
  );
  out.push(
    `statuses: ${sorted(r.statuses, (a, b) => a[0] - b[0])
      .map(([status, count]) => `${status}×${count}`)
      .join(' ')}`,
  );
  const notReached = r.notReached.length > 0 ? ` (not: ${r.notReached.join(', ')})` : '';
  out.push(`routes: ${r.reached} of ${r.routes} answered past their credential check at least once${notReached}`);
  out.push(`judged ${r.judged}; ${r.lostToExit} lost to an exit of svc-api (in flight when it exited, unanswered)`);
  out.push('');
  // A 500 is counted whatever its body: problem+json `internal`, or the console's HTML error page.
  out.push(`500 internal answers: ${r.internal.count} (goal 0: ${goal(r.internal.count === 0)})`);
  out.push(
    `error-level log lines: ${r.errorLineCount} (goal 0: ${goal(r.errorLineCount === 0)}); warnings ${r.warnings}; ` +
      `other stderr lines ${r.otherLineCount}`,
  );
  out.push(`process exits: ${r.exits.length} (goal 0: ${goal(r.exits.length === 0)})`);
  out.push(
    `open fds: ${r.before.fds} before, ${r.peak.fds} at peak, ${r.after.fds} after ${run.idleSeconds} s idle ` +
      `(goal within 10%: ${resourceGoal(r, r.before.fds, r.after.fds)})`,
  );
  out.push(
    `RSS: ${r.before.rssMb.toFixed(1)} MB before, ${r.peak.rssMb.toFixed(1)} at peak, ${r.after.rssMb.toFixed(1)} after ` +
      `(goal within 10%: ${resourceGoal(r, r.before.rssMb, r.after.rssMb)})`,
  );
  out.push(`503 service_unavailable (counted apart, not a failure): ${r.unavailable.count}`);
  out.push(
    `other 5xx: ${r.other5xx.count}; complete requests never answered: ${r.noAnswer.count}; ` +
      `stalled bodies not cut off: ${r.notCut.count}`,
  );
  out.push(`console forms from another site not refused: ${r.crossSite.count}`);
  const { probes } = r;
  const accepted = probes.guardAccepted.length > 0 ? ` — ACCEPTED: ${probes.guardAccepted.join(' ')}` : '';
  const refused = probes.guardTried - probes.guardAccepted.length;
  out.push(`probes: webhook guard refused ${refused} of ${probes.guardTried} non-public spellings${accepted}`);
  out.push(
    `probes: connections to the loopback trap that sent bytes: ${r.trap.sent}, ${r.trap.hellos} of them a TLS ClientHello ` +
      `(goal 0; connections ${r.trap.connections}: the guard checks the address once connected, as designed)`,
  );
  out.push(`probes: what svc-api recorded of the deliveries to the trap: ${r.trap.recorded.join('; ').slice(0, 300) || 'none'}`);
  const over = probes.overLimit.map((each) => `OVER ${each.limit}: ${each.kept} kept, cap ${each.cap}`).join('; ');
  out.push(`probes: counted limits under a burst: ${probes.overLimit.length === 0 ? 'all held' : over}`);
  out.push(`probes: console from another site: ${probes.crossSite.length === 0 ? 'refused throughout' : probes.crossSite.join('; ')}`);
  if (probes.void.length > 0) out.push(`probes not judged: ${probes.void.join('; ')}`);
  const section = (title: string, findings: Findings): void => {
    if (findings.count > 0) out.push('', `${title} (${findings.count}):`, ...findings.examples.map((example) => `  ${describe(example)}`));
  };
  section('500 internal', r.internal);
  section('other 5xx', r.other5xx);
  section('never answered', r.noAnswer);
  section('stalled body not cut off', r.notCut);
  section('console form from another site not refused', r.crossSite);
  section('503 service_unavailable', r.unavailable);
  if (r.errorLineCount > 0) {
    const byMessage = new Map<string, { count: number; indexes: number[] }>();
    for (const line of r.errorLines) {
      const key = `${line.msg}: ${line.err ?? ''}`.slice(0, 200);
      const entry = byMessage.get(key) ?? { count: 0, indexes: [] };
      entry.count += 1;
      if (line.index !== undefined && entry.indexes.length < run.examples) entry.indexes.push(line.index);
      byMessage.set(key, entry);
    }
    out.push('', `error-level log lines (${r.errorLineCount}; the first ${r.errorLines.length} grouped):`);
    for (const [message, entry] of byMessage) {
      out.push(`  ${entry.count}× ${message}${entry.indexes.length > 0 ? ` — cases ${cases(entry.indexes)}` : ''}`);
    }
  }
  if (r.exits.length > 0) {
    const byCrash = new Map<string, { count: number; lastLogged: Set<number> }>();
    for (const exit of r.exits) {
      const key = crashKey(exit);
      const entry = byCrash.get(key) ?? { count: 0, lastLogged: new Set() };
      entry.count += 1;
      for (const index of exit.lastLogged.slice(0, 1)) if (entry.lastLogged.size < run.examples) entry.lastLogged.add(index);
      byCrash.set(key, entry);
    }
    out.push('', `process exits (${r.exits.length}), by what svc-api printed:`);
    for (const [crash, entry] of byCrash) {
      const culprit = r.culprits.get(crash);
      out.push(`  ${entry.count}× exit ${crash}`);
      out.push(
        culprit === undefined
          ? `     not reproduced by one of its recent cases alone; the cases last logged before an exit: ${cases(entry.lastLogged)}`
          : `     reproduced alone by #${culprit.index} ${culprit.kind} ${culprit.method} ${culprit.target.slice(0, 100)}`,
      );
    }
  }
  if (r.otherLineCount > 0 && r.exits.length === 0) {
    out.push('', 'other stderr lines:', ...r.otherLines.slice(0, 5).map((line) => `  ${line}`));
  }
  const findings = [r.internal, r.other5xx, r.noAnswer, r.notCut, r.crossSite].reduce((sum, each) => sum + each.count, 0);
  if (findings + r.errorLineCount + r.exits.length > 0) {
    out.push('', `Reproduce one: npm run bench:fuzz -- --engine ${r.engine} --seed ${run.seed} --only <index>`);
  }
  process.stdout.write(`${out.join('\n')}\n`);
}

/** The goals one engine missed, a line each. */
function missedGoals(r: EngineReport, run: RunSettings): string[] {
  const list: string[] = [];
  const { engine } = r;
  if (r.internal.count > 0) list.push(`${engine}: ${r.internal.count} answers 500 internal`);
  if (r.errorLineCount > 0) list.push(`${engine}: ${r.errorLineCount} error-level log lines`);
  if (r.exits.length > 0) list.push(`${engine}: svc-api exited ${r.exits.length} times`);
  if (!r.restarted && !within(r.before.fds, r.after.fds)) {
    list.push(`${engine}: open fds ${r.before.fds} → ${r.after.fds} after ${run.idleSeconds} s idle`);
  }
  if (!r.restarted && !within(r.before.rssMb, r.after.rssMb)) {
    list.push(`${engine}: RSS ${r.before.rssMb.toFixed(1)} → ${r.after.rssMb.toFixed(1)} MB after ${run.idleSeconds} s idle`);
  }
  const accepted = r.probes.guardAccepted.length;
  if (accepted > 0) list.push(`${engine}: the webhook address guard took ${accepted} non-public spellings`);
  if (r.trap.sent > 0) list.push(`${engine}: ${r.trap.sent} webhook deliveries sent bytes to a loopback address`);
  for (const over of r.probes.overLimit) list.push(`${engine}: ${over.kept} ${over.limit} kept (cap ${over.cap})`);
  const crossSite = r.probes.crossSite.length + r.crossSite.count;
  if (crossSite > 0) list.push(`${engine}: ${crossSite} console requests from another site not refused`);
  return list;
}

export function printSummary(reports: EngineReport[], run: RunSettings): void {
  const rows = [
    [
      'engine',
      'cases',
      '500 internal',
      'error lines',
      'exits',
      '503 apart',
      'other 5xx',
      'unanswered',
      'fds before→after',
      'RSS MB before→after',
      'time',
    ],
  ];
  for (const r of reports) {
    rows.push([
      r.engine,
      String(r.cases),
      String(r.internal.count),
      String(r.errorLineCount),
      String(r.exits.length),
      String(r.unavailable.count),
      String(r.other5xx.count),
      String(r.noAnswer.count),
      `${r.before.fds}→${r.after.fds}${r.restarted ? '*' : ''}`,
      `${r.before.rssMb.toFixed(1)}→${r.after.rssMb.toFixed(1)}${r.restarted ? '*' : ''}`,
      `${r.seconds.toFixed(0)} s`,
    ]);
  }
  const missed = reports.flatMap((r) => missedGoals(r, run));
  const settings = `${run.concurrency} at once, svc-api --body-idle-seconds ${run.bodyIdleSeconds}, ${run.idleSeconds} s idle`;
  process.stdout.write(`\nseed ${run.seed}, ${run.requests} cases per engine, ${settings}\n${table(rows)}\n`);
  if (reports.some((r) => r.restarted)) {
    process.stdout.write('* svc-api was started again after an exit: before and after are of different processes\n');
  }
  process.stdout.write(missed.length === 0 ? 'Every goal met.\n' : `GOALS MISSED:\n${missed.map((line) => `  ${line}`).join('\n')}\n`);
}
