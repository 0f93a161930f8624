// Reads Prometheus' text exposition as a scraper would: one sample per line, `name{label="value",…} number`.

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export function parseExposition(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (match === null) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const pair of (match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[pair[1]!] = pair[2]!;
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return samples;
}

/** The value of the one sample of `name` whose labels include `labels`; undefined when there is none. */
export function sampleValue(samples: Sample[], name: string, labels: Record<string, string> = {}): number | undefined {
  const found = samples.filter(
    (sample) => sample.name === name && Object.entries(labels).every(([key, value]) => sample.labels[key] === value),
  );
  if (found.length > 1) throw new Error(`${found.length} samples of ${name} match ${JSON.stringify(labels)}`);
  return found[0]?.value;
}

/**
 * What `promtool check metrics` finds in the names of an exposition, as its lint does: a counter's name ends
 * `_total`, and nothing else's does (a gauge so named reads as a counter in every query built on the convention).
 */
export function namingFindings(text: string): string[] {
  const findings: string[] = [];
  for (const match of text.matchAll(/^# TYPE (\S+) (\w+)$/gm)) {
    const [, name, type] = match as unknown as [string, string, string];
    if (type === 'counter' && !name.endsWith('_total')) findings.push(`${name}: a counter whose name does not end _total`);
    if (type !== 'counter' && name.endsWith('_total')) findings.push(`${name}: a ${type} whose name ends _total`);
  }
  return findings;
}
