// The client a mail names (docs/api.md "Mail"): a family from a fixed table, "Chrome on Linux", "swarm-node CLI",
// "curl", else "an unknown client", and never the User-Agent's own text. Anyone may have a sign-in code mailed to any
// address, with a User-Agent of their choosing: quoted, "(… reply to helpdesk@evil.example with this code)" spoke in
// the mail's own voice, beside the very code it asks for. A table here, not a parser package: none is a dependency,
// and a mail needs a family, not a version or a device.

interface Family {
  name: string;
  test: RegExp;
}

/** Programs, by the product token that starts their User-Agent. The first that matches names it. */
const PROGRAMS: readonly Family[] = [
  { name: 'the swarm-node daemon', test: /^swarm-node-daemon(\/|$)/ },
  { name: 'swarm-node CLI', test: /^swarm-node(\/|$)/ },
  { name: 'curl', test: /^curl\// },
  { name: 'Wget', test: /^Wget\//i },
  { name: 'HTTPie', test: /^HTTPie\//i },
  { name: 'Postman', test: /^PostmanRuntime\// },
  { name: 'Python', test: /^(python-requests|python-httpx|Python-urllib|aiohttp)\//i },
  { name: 'Node.js', test: /^(node|node-fetch|undici|axios|got)(\/|$)/i },
  { name: 'Go', test: /^Go-http-client\// },
  { name: 'Java', test: /^(Java|Apache-HttpClient|okhttp)\//i },
  { name: 'PowerShell', test: /PowerShell\//i },
];

/** Browsers, by their tokens in a Mozilla/5.0 string: the more specific first (Edge and Opera say Chrome too). */
const BROWSERS: readonly Family[] = [
  { name: 'Edge', test: /\b(Edg|EdgA|EdgiOS)\// },
  { name: 'Opera', test: /\b(OPR|OPiOS)\// },
  { name: 'Samsung Internet', test: /\bSamsungBrowser\// },
  { name: 'Firefox', test: /\b(Firefox|FxiOS)\// },
  { name: 'Chrome', test: /\b(Chrome|CriOS|Chromium)\// },
  { name: 'Safari', test: /\bVersion\/[\d.]+.*\bSafari\// },
];

/** Operating systems, likewise: Android and ChromeOS before Linux, iOS before macOS (an iPad says "like Mac OS X"). */
const SYSTEMS: readonly Family[] = [
  { name: 'Windows', test: /\bWindows\b/ },
  { name: 'Android', test: /\bAndroid\b/ },
  { name: 'ChromeOS', test: /\bCrOS\b/ },
  { name: 'iOS', test: /\b(iPhone|iPad|iPod)\b/ },
  { name: 'macOS', test: /\bMac OS X\b|\bMacintosh\b/ },
  { name: 'Linux', test: /\bLinux\b/ },
];

export const UNKNOWN_CLIENT = 'an unknown client';

/** The client's family, as a mail says it: only ever a name of the tables above, or UNKNOWN_CLIENT. */
export function clientNameOf(userAgent: string | null): string {
  if (userAgent === null) return UNKNOWN_CLIENT;
  const program = PROGRAMS.find((family) => family.test.test(userAgent));
  if (program !== undefined) return program.name;
  if (!userAgent.startsWith('Mozilla/')) return UNKNOWN_CLIENT;
  const browser = BROWSERS.find((family) => family.test.test(userAgent))?.name;
  const system = SYSTEMS.find((family) => family.test.test(userAgent))?.name;
  if (browser === undefined) return system === undefined ? UNKNOWN_CLIENT : `a browser on ${system}`;
  return system === undefined ? browser : `${browser} on ${system}`;
}
