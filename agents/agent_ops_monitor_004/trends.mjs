// Trends over the recorded runs (./history.mjs): a least-squares line through each series. For a filesystem, the
// line through the samples since its last clean-up (a fall of more than CLEANUP_POINTS) says how fast it fills and
// when it will be full; a slope no steadier than its own noise, or a fill more than a year away, is no forecast.

const HOUR_MS = 3_600_000;
/** A fall of at least this many points of use is a clean-up (rotated logs, a deleted dump): the trend starts after it. */
const CLEANUP_POINTS = 2;
/** Beyond this, "full in" is no forecast a person acts on. */
const HORIZON_HOURS = 365 * 24;
/**
 * Samples closer together than this show a file being written, not a trend: runs seconds apart (a person trying the
 * agent, a build beside it) would forecast "full in hours" from a temporary file. Half an hour is six runs at the
 * documented `--every 5m`.
 */
const MIN_SPAN_HOURS = 0.5;

/** `{slope, intercept, se}` of y over x by least squares; `se` is the slope's standard error (null for 2 points). */
export function fitLine(points) {
  const n = points.length;
  const meanX = points.reduce((sum, p) => sum + p.x, 0) / n;
  const meanY = points.reduce((sum, p) => sum + p.y, 0) / n;
  let sxx = 0;
  let sxy = 0;
  for (const p of points) {
    sxx += (p.x - meanX) ** 2;
    sxy += (p.x - meanX) * (p.y - meanY);
  }
  if (sxx === 0) return null;
  const slope = sxy / sxx;
  const intercept = meanY - slope * meanX;
  if (n < 3) return { slope, intercept, se: null };
  const residual = points.reduce((sum, p) => sum + (p.y - (intercept + slope * p.x)) ** 2, 0);
  return { slope, intercept, se: Math.sqrt(residual / (n - 2) / sxx) };
}

/** The samples since the last clean-up: from the last fall of CLEANUP_POINTS or more between two samples. */
function sinceCleanup(samples) {
  let start = 0;
  for (let i = 1; i < samples.length; i++) if (samples[i].used_percent <= samples[i - 1].used_percent - CLEANUP_POINTS) start = i;
  return samples.slice(start);
}

const round = (value, digits) => Math.round(value * 10 ** digits) / 10 ** digits;

/**
 * When a filesystem will be full, from its samples `[{at (ms), used_percent}]` oldest first, at `now`:
 * `{rate_percent_per_hour, hours_to_full, full_at, samples}`, or null when it is not filling (flat, shrinking, noise,
 * a year or more away) or the samples cannot tell (one, or all within MIN_SPAN_HOURS).
 */
export function fillForecast(samples, now) {
  const recent = sinceCleanup(samples);
  if (recent.length < 2 || (recent.at(-1).at - recent[0].at) / HOUR_MS < MIN_SPAN_HOURS) return null;
  const fit = fitLine(recent.map((sample) => ({ x: (sample.at - now) / HOUR_MS, y: sample.used_percent })));
  if (fit === null || fit.slope <= 0) return null;
  // Not told apart from noise: the slope is within twice its standard error of zero.
  if (fit.se !== null && fit.slope < 2 * fit.se) return null;
  const lastX = (recent.at(-1).at - now) / HOUR_MS;
  const hours = (100 - (fit.intercept + fit.slope * lastX)) / fit.slope + lastX;
  if (hours > HORIZON_HOURS) return null;
  return { rate_percent_per_hour: round(fit.slope, 3), hours_to_full: round(Math.max(0, hours), 1), full_at: new Date(now + Math.max(0, hours) * HOUR_MS).toISOString(), samples: recent.length };
}

/** A series' change per hour over the recorded runs, `{per_hour, samples}`, or null with fewer than 3 samples. */
export function trendOf(points) {
  if (points.length < 3) return null;
  const fit = fitLine(points.map((point) => ({ x: point.at / HOUR_MS, y: point.value })));
  if (fit === null) return null;
  const steady = fit.se !== null && Math.abs(fit.slope) >= 2 * fit.se;
  return { per_hour: round(fit.slope, 3), direction: !steady ? 'flat' : fit.slope > 0 ? 'rising' : 'falling', samples: points.length };
}
