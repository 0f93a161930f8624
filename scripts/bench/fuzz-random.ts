// The fuzz bench's randomness (./fuzz.ts): each case draws from a generator of its own, seeded from the run's seed and
// the case's index, so `--only <index>` rebuilds one case without the others, and the same seed the same cases.

export class Rng {
  #state: number;

  constructor(seed: number) {
    this.#state = seed >>> 0;
  }

  /** mulberry32: small, fast, and good enough to choose bytes. */
  next(): number {
    this.#state = (this.#state + 0x6d2b79f5) >>> 0;
    let t = this.#state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** 0 to n - 1. */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  /** lo to hi, both included. */
  between(lo: number, hi: number): number {
    return lo + this.int(hi - lo + 1);
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)]!;
  }

  /** One of the keys, each as likely as its weight. */
  weighted<K extends string>(weights: Readonly<Record<K, number>>): K {
    const entries = Object.entries(weights) as [K, number][];
    let left = this.next() * entries.reduce((sum, [, weight]) => sum + weight, 0);
    for (const [key, weight] of entries) {
      left -= weight;
      if (left < 0) return key;
    }
    return entries.at(-1)![0];
  }

  bytes(n: number): Buffer {
    const out = Buffer.alloc(n);
    for (let i = 0; i < n; i += 1) out[i] = this.int(256);
    return out;
  }

  hex(n: number): string {
    let out = '';
    for (let i = 0; i < n; i += 1) out += '0123456789abcdef'[this.int(16)];
    return out;
  }

  uuid(): string {
    return `${this.hex(8)}-${this.hex(4)}-4${this.hex(3)}-a${this.hex(3)}-${this.hex(12)}`;
  }
}

/** The generator of case `index` under `seed`: a 32-bit mix of both (murmur3's finaliser). */
export function caseRng(seed: number, index: number): Rng {
  let h = Math.imul(seed ^ 0x85ebca6b, 0xc2b2ae35) ^ Math.imul(index + 0x27d4eb2f, 0x165667b1);
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return new Rng(h);
}

/**
 * Pieces of text a client may send: ASCII, what JSON and URLs escape, controls and U+0000, Unicode that folds or
 * reorders (the Kelvin sign, a right-to-left override, combining marks), lone surrogates, astral characters.
 */
const PIECES = [
  'a',
  'b',
  'z',
  'A',
  'Z',
  '0',
  '7',
  '9',
  ' ',
  '-',
  '_',
  '.',
  '/',
  '%',
  '+',
  '"',
  "'",
  '\\',
  '<',
  '>',
  '&',
  '{',
  '}',
  '#',
  '?',
  'é',
  'ß',
  'İ',
  '\u212a',
  '\u0000',
  '\u0001',
  '\u001f',
  '\u007f',
  '\u0085',
  '\u00a0',
  '\u2028',
  '\u2029',
  '\u200b',
  '\u202e',
  '\ufeff',
  '\ufffd',
  '\ud800',
  '\udfff',
  '😀',
  '𝔘',
  'ａ',
  'ﬁ',
  'e\u0301',
  '中',
  'ع',
  '\n',
  '\r',
  '\t',
];

/** Text of up to `max` characters: mostly short, mostly ASCII, with the odd piece from PIECES. */
export function randomText(rng: Rng, max = 64, min = 0): string {
  const length = rng.chance(0.1)
    ? max + rng.int(2)
    : rng.chance(0.7)
      ? rng.between(min, Math.max(min, Math.min(max, 12)))
      : rng.between(min, max);
  const ascii = rng.chance(0.5);
  let out = '';
  while (out.length < length) out += ascii && rng.chance(0.9) ? 'abcdefghijklmnopqrstuvwxyz0123456789'[rng.int(36)] : rng.pick(PIECES);
  return out;
}

/** A plain token: what an id or a name of the service looks like. */
export function token(rng: Rng, min = 1, max = 16): string {
  let out = '';
  const length = rng.between(Math.max(1, min), Math.max(min, max));
  for (let i = 0; i < length; i += 1) out += 'abcdefghijklmnopqrstuvwxyz0123456789'[rng.int(36)];
  return out;
}
