// One character per value, its height the value's share of the largest (▁ to █), for a terminal's line: a day
// without spend is the lowest bar, and a day with any spend is never drawn as low as one without.
const BARS = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'] as const;

export function sparkline(values: readonly number[]): string {
  const top = Math.max(0, ...values);
  return values
    .map((value) => {
      if (value <= 0 || top === 0) return BARS[0];
      return BARS[1 + Math.min(BARS.length - 2, Math.floor((value / top) * (BARS.length - 1) - 1e-9))];
    })
    .join('');
}
