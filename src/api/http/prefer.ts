// RFC 7240 Prefer, as execute and GET /v1/swarm/runs/{id} read it: `wait=<seconds>` bounds how long the service holds
// the request for the run to finish, `respond-async` asks for the answer at once (202 with the run as it stands).
// The service's own bound is the most a client can ask for.

/** The time to wait for a run, from the Prefer header(s) and the service's bound. */
export function preferredWaitMs(header: string | string[] | undefined, boundMs: number): number {
  const preferences = [header ?? []]
    .flat()
    .join(',')
    .split(',')
    .map((part) => part.trim().toLowerCase());
  if (preferences.includes('respond-async')) return 0;
  const wait = preferences.map((part) => /^wait\s*=\s*"?(\d{1,6})"?$/.exec(part)?.[1]).find((value) => value !== undefined);
  return wait === undefined ? boundMs : Math.min(boundMs, Number(wait) * 1000);
}
