// agent_ops_monitor_004's eval: its forecast of when a filesystem fills, on recorded histories made from the set's
// definitions (the truth computed from the definition, never from the agent); then runs on this host with its
// state kept, to show the history growing and what each run costs in time.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { AGENTS_DIR, figure, heading, percent, readSet, runAgent, setParts, tempDir } from './support.mjs';

const AGENT = 'agent_ops_monitor_004';
const HOUR_MS = 3_600_000;
const TOLERANCE = 0.25;

function seeded(seed) {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 4294967296;
  };
}

/** A disk full further out than this has no forecast to judge: "never" is the truth. */
const HORIZON_HOURS = 8_760;

/**
 * The samples a series' definition makes, and the truth: hours from the last sample until 100 %, or null. `every` is
 * the minutes between runs, one figure or one for each gap; `drop` one fall (`{at, by}`, a negative `by` a step up)
 * or several; `accel` what the rate gains each hour (%/h per hour).
 */
export function seriesOf(definition, index) {
  const random = seeded(index + 1);
  const start = Date.UTC(2026, 0, 1);
  const drops = [definition.drop ?? []].flat();
  const accel = definition.accel ?? 0;
  const minutesAt = (i) =>
    Array.isArray(definition.every) ? definition.every.slice(0, i).reduce((sum, gap) => sum + gap, 0) : i * definition.every;
  const samples = [];
  let offset = 0;
  let lastTruth = definition.start;
  let lastHours = 0;
  for (let i = 0; i < definition.samples; i++) {
    for (const drop of drops) if (i === drop.at) offset -= drop.by;
    const hours = minutesAt(i) / 60;
    const truth = definition.start + definition.rate * hours + (accel * hours * hours) / 2 + offset;
    const noise = definition.noise * (2 * random() - 1);
    samples.push({ at: start + minutesAt(i) * 60_000, used_percent: Math.min(100, Math.max(0, truth + noise)) });
    [lastTruth, lastHours] = [truth, hours];
  }
  const rateNow = definition.rate + accel * lastHours;
  const left = 100 - lastTruth;
  const hours = accel > 0 ? (-rateNow + Math.sqrt(rateNow * rateNow + 2 * accel * left)) / accel : rateNow > 0 ? left / rateNow : null;
  const hoursToFull = definition.insufficient || hours === null || hours > HORIZON_HOURS ? null : hours;
  return { samples, hoursToFull };
}

async function forecastPart(part, fillForecast) {
  const set = readSet(AGENT, part);
  let right = 0;
  const lines = [];
  set.series.forEach((definition, index) => {
    const { samples, hoursToFull } = seriesOf(definition, index);
    const forecast = fillForecast ? fillForecast(samples, samples.at(-1).at) : null;
    const got = forecast?.full_at ? (Date.parse(forecast.full_at) - samples.at(-1).at) / HOUR_MS : null;
    const ok = hoursToFull === null ? got === null : got !== null && Math.abs(got - hoursToFull) <= TOLERANCE * hoursToFull;
    if (ok) right++;
    lines.push(
      `${ok ? 'right' : 'wrong'}: ${definition.name}: truth ${hoursToFull === null ? 'never' : `${hoursToFull.toFixed(1)} h`}, forecast ${got === null ? 'never' : `${got.toFixed(1)} h`}`,
    );
  });
  heading(`${AGENT} (${part}): ${set.series.length} recorded histories of a filesystem`);
  figure(
    `forecasts of "full in" within ${TOLERANCE * 100}% of the truth (or none)`,
    `${right} of ${set.series.length}`,
    percent(right, set.series.length),
  );
  for (const line of lines) process.stdout.write(`    ${line}\n`);
}

async function hostPart() {
  const stateDir = tempDir('ops-state');
  heading(`${AGENT} (this host): 3 runs with the state kept between them`);
  for (let i = 1; i <= 3; i++) {
    const run = await runAgent(AGENT, {}, { stateDir });
    const history = run.json?.history;
    figure(
      `run ${i}`,
      `${Math.round(run.ms)} ms`,
      run.exitCode === 0
        ? `status ${run.json.status}, history ${history ? `${history.runs} runs` : 'none'}, changes ${run.json.changes ? run.json.changes.length : 'none'}`
        : `exit ${run.exitCode}`,
    );
  }
}

export async function evalOpsMonitor() {
  const module = join(AGENTS_DIR, AGENT, 'trends.mjs');
  const fillForecast = existsSync(module) ? (await import(pathToFileURL(module).href)).fillForecast : null;
  for (const part of setParts(AGENT)) await forecastPart(part, fillForecast);
  await hostPart();
}
