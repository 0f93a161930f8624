// What scripts/bench/execute.ts prints: each side's figures, then every goal of docs/operations.md "Benchmarks" with
// its paired ratio (or its measure), the spread of its rounds and a verdict, one run at a time, the statements
// PostgreSQL counted, and the books.
import { median, percentileOf, spreadLine, spreadOf, SPREAD_LIMIT, table } from './support.js';

export interface Measured {
  runsPerSecond: number;
  cpuMsPerRun: number;
  /** PostgreSQL: the CPU time of the server's processes in the burst, per run. */
  databaseCpuMsPerRun: number;
  exchangesPerRun: number;
  /** PostgreSQL: statements the server counted in the burst, per run. */
  roundTripsPerRun: number | undefined;
  p50: number;
  p99: number;
  failures: number;
}

export interface SideResult {
  name: string;
  kind: 'dispatch' | 'sqlite' | 'postgres';
  users: number;
  rounds: Measured[];
  /** One run at a time: milliseconds per run. */
  alone: number[] | undefined;
  /** The last round's statements (PostgreSQL), most called first: calls per run, mean execution ms, text. */
  statements: { perRun: number; execMs: number; query: string }[] | undefined;
}

/** bench:execute's goals (docs/operations.md "Benchmarks"). */
const GOALS = {
  roundTrips: 5,
  postgresVsSqlite: 0.6,
  oneUserVsMany: 0.8,
  twoInstancesVsOne: 1.0,
  sqliteVsDispatch: 0.25,
  sqliteAloneP50: 2.5,
  sqliteAloneP99: 10,
  sqliteP99: 60,
  postgresP99: 150,
};

export function report(input: {
  sides: SideResult[];
  ledger: { line: string }[];
  connections: number;
  runs: number;
  rounds: number;
  userCount: number;
  agent: string;
}): string {
  const { sides } = input;
  const byName = new Map(sides.map((side) => [side.name, side]));
  const fixed = (value: number | undefined, digits: number): string =>
    value === undefined || Number.isNaN(value) ? '' : value.toFixed(digits);
  const lines = [
    `execute bench: ${input.agent}, ${input.connections} runs in flight, ${input.runs} runs per side per round (the dispatch server: a time), ${input.rounds} rounds, loopback, node ${process.version}`,
  ];
  const rows = [
    ['', 'users', 'runs/s', 'min–max', 'CPU ms/run', 'database CPU ms/run', 'exchanges/run', 'round trips/run', 'p50 ms', 'p99 ms'],
  ];
  for (const side of sides) {
    const rates = side.rounds.map((each) => each.runsPerSecond);
    const trips = side.rounds.map((each) => each.roundTripsPerRun).filter((each): each is number => each !== undefined);
    rows.push([
      side.name,
      String(side.users),
      Math.round(median(rates)).toString(),
      `${Math.round(Math.min(...rates))}–${Math.round(Math.max(...rates))}`,
      fixed(median(side.rounds.map((each) => each.cpuMsPerRun)), 2),
      fixed(median(side.rounds.map((each) => each.databaseCpuMsPerRun)), 2),
      fixed(median(side.rounds.map((each) => each.exchangesPerRun)), 2),
      trips.length === 0 ? '' : fixed(median(trips), 2),
      fixed(median(side.rounds.map((each) => each.p50)), 1),
      fixed(median(side.rounds.map((each) => each.p99)), 1),
    ]);
  }
  lines.push(table(rows));
  lines.push(
    `runs/s by round: ${sides.map((side) => `${side.name} ${side.rounds.map((each) => Math.round(each.runsPerSecond)).join(' ')}`).join('; ')}`,
  );

  const goals: string[][] = [['goal (issue 31)', 'measured', 'target', 'verdict', 'spread of the rounds']];
  /** A paired ratio of runs/s, round by round. */
  const ratio = (label: string, over: string, under: string, target: number): void => {
    const a = byName.get(over);
    const b = byName.get(under);
    if (a === undefined || b === undefined) return;
    const ratios = a.rounds.map((each, round) => each.runsPerSecond / b.rounds[round]!.runsPerSecond);
    goals.push([
      label,
      `${median(ratios).toFixed(3)}x`,
      `>= ${target}x`,
      verdict(median(ratios) >= target, spreadOf(ratios)),
      spreadLine(ratios),
    ]);
  };
  /** A measure per round held to a bound. */
  const bound = (label: string, values: number[], target: number, unit: string): void => {
    if (values.length === 0) return;
    const spread = spreadOf(values);
    const range = `rounds ${percentileOf(values, 0.25).toFixed(1)}–${percentileOf(values, 0.75).toFixed(1)} (p25–p75), min–max ${Math.min(...values).toFixed(1)}–${Math.max(...values).toFixed(1)}`;
    goals.push([label, `${median(values).toFixed(2)}${unit}`, `<= ${target}${unit}`, verdict(median(values) <= target, spread), range]);
  };
  const many = `postgres ${input.userCount} users`;
  for (const name of ['postgres', many]) {
    const side = byName.get(name);
    if (side !== undefined)
      bound(
        `round trips per run, ${name}`,
        side.rounds.map((each) => each.roundTripsPerRun ?? Number.NaN),
        GOALS.roundTrips,
        '',
      );
  }
  ratio('postgres vs sqlite runs/s, 1 user', 'postgres', 'sqlite', GOALS.postgresVsSqlite);
  ratio(`one user vs ${input.userCount} users runs/s (postgres)`, 'postgres', many, GOALS.oneUserVsMany);
  ratio(`two instances vs one, ${input.userCount} users (postgres)`, `${many} x2`, many, GOALS.twoInstancesVsOne);
  ratio('sqlite vs the dispatch server runs/s', 'sqlite', 'dispatch', GOALS.sqliteVsDispatch);
  const sqliteAlone = byName.get('sqlite')?.alone;
  if (sqliteAlone !== undefined) {
    // The runs one at a time in six slices, so the p50 has a spread like the rounds'.
    const slices = Array.from({ length: 6 }, (_, slice) => sqliteAlone.filter((_, index) => index % 6 === slice));
    const p50s = slices.map((slice) => percentileOf(slice, 0.5));
    const p50 = percentileOf(sqliteAlone, 0.5);
    const p99 = percentileOf(sqliteAlone, 0.99);
    goals.push([
      'sqlite one run alone, p50',
      `${p50.toFixed(2)} ms`,
      `<= ${GOALS.sqliteAloneP50} ms`,
      verdict(p50 <= GOALS.sqliteAloneP50, spreadOf(p50s)),
      `slices' p50 ${Math.min(...p50s).toFixed(2)}–${Math.max(...p50s).toFixed(2)} ms`,
    ]);
    goals.push([
      'sqlite one run alone, p99',
      `${p99.toFixed(2)} ms`,
      `<= ${GOALS.sqliteAloneP99} ms`,
      p99 <= GOALS.sqliteAloneP99 ? 'met' : 'NOT MET',
      `of ${sqliteAlone.length} runs`,
    ]);
  }
  for (const [name, target] of [
    ['sqlite', GOALS.sqliteP99],
    ['postgres', GOALS.postgresP99],
    [many, GOALS.postgresP99],
  ] as const) {
    const side = byName.get(name);
    if (side !== undefined)
      bound(
        `p99 at ${input.connections} in flight, ${name}`,
        side.rounds.map((each) => each.p99),
        target,
        ' ms',
      );
  }
  for (const engine of ['sqlite', 'postgres']) {
    const after = byName.get(engine);
    const before = byName.get(`${engine} baseline`);
    if (before === undefined || after === undefined) continue;
    const ratios = after.rounds.map((each, round) => each.runsPerSecond / before.rounds[round]!.runsPerSecond);
    const cpu = after.rounds.map((each, round) => each.cpuMsPerRun / before.rounds[round]!.cpuMsPerRun);
    goals.push([
      `${engine} vs ${engine} baseline runs/s (CPU per run ${median(cpu).toFixed(3)}x)`,
      `${median(ratios).toFixed(3)}x`,
      '',
      verdict(true, spreadOf(ratios)),
      spreadLine(ratios),
    ]);
  }
  lines.push('', table(goals));

  const alone = sides.filter((side) => side.alone !== undefined);
  if (alone.length > 0) {
    lines.push('', 'one run at a time, interleaved run by run across the sides (latency without queueing behind other runs):');
    lines.push(
      table([
        ['', 'p50 ms', 'p99 ms'],
        ...alone.map((side) => [side.name, percentileOf(side.alone!, 0.5).toFixed(2), percentileOf(side.alone!, 0.99).toFixed(2)]),
      ]),
    );
  }
  for (const side of sides) {
    if (side.statements === undefined) continue;
    lines.push('', `${side.name}: statements of the last round (pg_stat_statements), most called first: calls per run, mean execution ms`);
    for (const each of side.statements)
      lines.push(`  ${each.perRun.toFixed(3).padStart(7)} ${each.execMs.toFixed(3).padStart(7)}  ${each.query}`);
  }
  lines.push('', 'ledger:', ...input.ledger.map((each) => `  ${each.line}`), '');
  return lines.join('\n');
}

function verdict(met: boolean, spread: number): string {
  return `${met ? 'met' : 'NOT MET'}${spread > SPREAD_LIMIT ? ' (spread too wide to judge)' : ''}`;
}
