// Checks of the fuzz bench (./fuzz.ts) that a status code alone cannot make, each against what docs/api.md promises:
// - the webhook address guard: an endpoint written as a non-public address is refused 400 ("Webhooks": "Only
//   public addresses"), in every spelling of one; and no delivery ever connects to the bench's loopback trap (an
//   endpoint named `localhost` on it passes registration, and must be refused where each delivery connects);
// - counted limits under concurrency: 100 secrets and 10 webhook endpoints a user, 5 sign-in codes an address an
//   hour, 60 uploads a user an hour, each sent at once in a burst well past the limit;
// - the console against other sites: a sign-in link followed from another site must not make a session, a form
//   posted with the session from another site must be refused ("Wallet page").
import { createServer, type Server, type Socket } from 'node:net';
import { bundleOf, call, consoleSession } from './fuzz-fixtures.js';

export interface Trap {
  port: number;
  /** Connections that sent a byte (a TLS ClientHello): a delivery the guard let through. */
  deliveries(): number;
  /** Of those, the ones that began with a TLS handshake. */
  hellos(): number;
  /** Connections at all: the guard checks the peer's address once connected, before any byte, by design. */
  connections(): number;
  close(): Promise<void>;
}

/** A listener on 127.0.0.1 (and ::1 on the same port when it can) that counts whoever connects and sends. */
export async function openTrap(): Promise<Trap> {
  let connected = 0;
  let sent = 0;
  let hellos = 0;
  const servers: Server[] = [];
  const open = new Set<Socket>();
  const listen = (host: string, port: number): Promise<Server | undefined> =>
    new Promise((resolve) => {
      const server = createServer((socket) => {
        connected += 1;
        open.add(socket);
        socket.once('close', () => open.delete(socket));
        socket.setTimeout(15_000, () => socket.destroy());
        socket.once('data', (chunk: Buffer) => {
          sent += 1;
          // 0x16: a TLS handshake record, the ClientHello an HTTPS delivery opens with.
          if (chunk[0] === 0x16) hellos += 1;
          socket.destroy();
        });
        socket.on('error', () => undefined);
      });
      server.once('error', () => resolve(undefined));
      server.listen(port, host, () => resolve(server));
    });
  const first = (await listen('127.0.0.1', 0))!;
  servers.push(first);
  const port = (first.address() as { port: number }).port;
  const six = await listen('::1', port);
  if (six !== undefined) servers.push(six);
  return {
    port,
    deliveries: () => sent,
    hellos: () => hellos,
    connections: () => connected,
    close: () => {
      for (const socket of open) socket.destroy();
      return Promise.all(servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve())))).then(() => undefined);
    },
  };
}

/** Hosts that are not public unicast addresses, spelled as URLs may spell them. */
export function privateHosts(): string[] {
  return [
    '127.0.0.1',
    '127.1',
    '127.0.1',
    '0x7f.1',
    '0x7f000001',
    '2130706433',
    '017700000001',
    '0177.0.0.1',
    '127.0.0.1.',
    '[::1]',
    '[0:0:0:0:0:0:0:1]',
    '[::ffff:127.0.0.1]',
    '[::ffff:7f00:1]',
    '[0:0:0:0:0:ffff:127.0.0.1]',
    '[::127.0.0.1]',
    '[::ffff:0:127.0.0.1]',
    '[64:ff9b::127.0.0.1]',
    '[64:ff9b:1::7f00:1]',
    '[2002:7f00:1::]',
    '0.0.0.0',
    '0',
    '[::]',
    '10.0.0.1',
    '172.16.0.1',
    '192.168.0.1',
    '169.254.169.254',
    '[::ffff:169.254.169.254]',
    '[fe80::1]',
    '[fc00::1]',
    '[fd00::1]',
    '100.64.0.1',
    '224.0.0.1',
    '255.255.255.255',
    '198.18.0.1',
    '192.0.0.1',
    '192.0.2.1',
    '[2001:db8::1]',
    '240.0.0.1',
  ];
}

export interface ProbeFindings {
  /** Private spellings an endpoint was registered with. */
  guardAccepted: string[];
  guardTried: number;
  /** Limit name → how many were kept, where more than the limit. */
  overLimit: { limit: string; cap: number; kept: number }[];
  /** What a request from another site did that it must not. */
  crossSite: string[];
  /** A probe that could not be judged, and why. */
  void: string[];
  /** The probe user's endpoint on the trap, whose deliveries are read at the end. */
  trapEndpointId: string;
}

export interface Prober {
  email: string;
  token: string;
  nodeCredential: string;
}

export async function runProbes(origin: string, prober: Prober, trapPort: number): Promise<ProbeFindings> {
  const findings: ProbeFindings = { guardAccepted: [], guardTried: 0, overLimit: [], crossSite: [], void: [], trapEndpointId: '' };
  const bearer = prober.token;
  const node = prober.nodeCredential;
  // A run of the probe user's, finished through its node, so that its events are delivered to the trap's endpoint.
  const endpoint = await call(origin, 'POST', '/v1/swarm/webhooks', { bearer, body: { url: `https://localhost:${trapPort}/probe` } });
  findings.trapEndpointId = String(endpoint.body.endpoint_id);
  const run = await call(origin, 'POST', '/v1/swarm/execute', {
    bearer,
    body: { user_id: prober.email, agent_id: 'agent_ops_monitor_004' },
    headers: { prefer: 'respond-async', 'idempotency-key': 'fuzz-probe' },
  });
  const pollBody = { hostname: 'probe', version: 'fuzz', capacity: 4, running: [], wait_seconds: 5 };
  const polled = await call(origin, 'POST', '/v1/swarm/nodes/poll', { bearer: node, body: pollBody });
  const handed = (polled.body.runs ?? []) as { run_id: string; lease_id: string }[];
  const lease = handed.find((each) => each.run_id === run.body.run_id)?.lease_id;
  if (lease === undefined) {
    findings.void.push(`trap: the probe's run was not handed to its node (execute ${run.status}, poll ${polled.status})`);
  } else {
    const result = { lease_id: lease, status: 'succeeded', output: {} };
    await call(origin, 'POST', `/v1/swarm/runs/${String(run.body.run_id)}/result`, { bearer: node, body: result });
  }

  for (const host of privateHosts()) {
    findings.guardTried += 1;
    const answer = await call(origin, 'POST', '/v1/swarm/webhooks', { bearer, body: { url: `https://${host}:${trapPort}/hook` } });
    if (answer.status === 201) {
      findings.guardAccepted.push(host);
      await call(origin, 'DELETE', `/v1/swarm/webhooks/${answer.body.endpoint_id as string}`, { bearer });
    } else if (answer.status !== 400) {
      findings.void.push(`guard ${host}: answered ${answer.status} ${String(answer.body.code)}`);
    }
  }

  const burst = <T>(count: number, each: (i: number) => Promise<T>): Promise<T[]> =>
    Promise.all(Array.from({ length: count }, (_, i) => each(i)));
  const counted = async (path: string, field: string): Promise<number> =>
    ((await call(origin, 'GET', path, { bearer })).body[field] as unknown[] | undefined)?.length ?? 0;
  const secretPath = (i: number): string => `/v1/swarm/secrets/PROBE_${String(i).padStart(3, '0')}`;
  await burst(130, (i) => call(origin, 'PUT', secretPath(i), { bearer, body: { value: 'x' } }));
  const secrets = await counted('/v1/swarm/secrets', 'secrets');
  if (secrets > 100) findings.overLimit.push({ limit: 'secrets a user', cap: 100, kept: secrets });

  await burst(25, (i) => call(origin, 'POST', '/v1/swarm/webhooks', { bearer, body: { url: `https://probe-${i}.fuzz.invalid/hook` } }));
  const endpoints = await counted('/v1/swarm/webhooks', 'webhooks');
  if (endpoints > 10) findings.overLimit.push({ limit: 'webhook endpoints a user', cap: 10, kept: endpoints });

  const address = 'fuzz-codes@example.com';
  await burst(20, () => call(origin, 'POST', '/v1/auth/email-code', { body: { email: address } }));
  const mail = await call(origin, 'GET', `/sandbox/mail?to=${encodeURIComponent(address)}&limit=50`);
  const codes = (mail.body.messages as unknown[] | undefined)?.length ?? 0;
  if (codes > 5) findings.overLimit.push({ limit: 'sign-in codes an address an hour', cap: 5, kept: codes });

  const agent = 'agent_svc_skills_005';
  const bundles = await Promise.all(Array.from({ length: 80 }, (_, i) => bundleOf(agent, `9.0.${i}-probe`)));
  const uploads = await burst(80, (i) =>
    call(origin, 'POST', `/v1/swarm/agents/${agent}/versions`, {
      bearer,
      raw: bundles[i]!,
      headers: { 'content-type': 'application/gzip' },
    }),
  );
  const uploaded = uploads.filter((answer) => answer.status === 201).length;
  if (uploaded > 60) findings.overLimit.push({ limit: 'uploads a user an hour', cap: 60, kept: uploaded });

  const link = `/wallet/login?token=${prober.token}&intent=swarm_private_access`;
  for (const site of ['cross-site', 'same-site']) {
    const answer = await call(origin, 'GET', link, { headers: { 'sec-fetch-site': site, 'sec-fetch-mode': 'navigate' } });
    if (/svc_wallet=[^;]+/.test(answer.headers.get('set-cookie') ?? '')) {
      findings.crossSite.push(`GET /wallet/login?token=… with Sec-Fetch-Site: ${site} made a session (${answer.status}, svc_wallet set)`);
    }
  }
  const cookie = await consoleSession(origin, prober.token, { 'sec-fetch-site': 'none' }).catch(() => undefined);
  if (cookie === undefined) {
    findings.void.push('console: the sign-in link typed in the address bar (Sec-Fetch-Site: none) made no session');
    return findings;
  }
  const forms: [string, string][] = [
    ['/wallet/fund', 'amount=1'],
    ['/wallet/budgets', 'scope=all&period=day&cap=1'],
    ['/wallet/logout', ''],
  ];
  const foreign: Record<string, string>[] = [
    { 'sec-fetch-site': 'cross-site' },
    { 'sec-fetch-site': 'same-site' },
    { origin: 'https://evil.example' },
    {},
  ];
  for (const [path, body] of forms) {
    for (const headers of foreign) {
      const answer = await call(origin, 'POST', path, {
        raw: Buffer.from(body),
        headers: { cookie: `svc_wallet=${cookie}`, 'content-type': 'application/x-www-form-urlencoded', ...headers },
      });
      if (answer.status < 400) {
        findings.crossSite.push(`POST ${path} with the session and ${JSON.stringify(headers)} answered ${answer.status}`);
      }
    }
  }
  return findings;
}
