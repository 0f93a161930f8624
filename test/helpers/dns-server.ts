// A real DNS server for a test: dnsmasq (Debian's dnsmasq-base, installed by .ci/run) on a port of loopback,
// answering only the zone the test gives it (`--local`: any other name under it is NXDOMAIN) and nothing else, so
// an agent's MX lookups meet real DNS answers (MX, A, NXDOMAIN, RFC 7505's null MX) without the internet.
import { execa, type ResultPromise } from 'execa';
import { createSocket } from 'node:dgram';
import { Resolver } from 'node:dns/promises';
import { waitFor } from './wait.js';

export interface DnsZone {
  /** The zone dnsmasq answers for alone, e.g. "test". */
  zone: string;
  /** domain → [exchange, priority]; an exchange of "." is a null MX. */
  mx?: Record<string, [string, number]>;
  /** domain → IPv4 address. */
  a?: Record<string, string>;
}

export interface DnsServer {
  /** "127.0.0.1:PORT", what a resolver is pointed at. */
  address: string;
  stop(): Promise<void>;
}

function freeUdpPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const socket = createSocket('udp4');
    socket.once('error', reject);
    socket.bind(0, '127.0.0.1', () => {
      const { port } = socket.address();
      socket.close(() => resolve(port));
    });
  });
}

export async function startDnsServer(zone: DnsZone): Promise<DnsServer> {
  const port = await freeUdpPort();
  const args = [
    '--keep-in-foreground',
    '--conf-file=/dev/null',
    `--port=${port}`,
    '--listen-address=127.0.0.1',
    '--bind-interfaces',
    '--no-resolv',
    '--no-hosts',
    '--log-facility=-',
    `--local=/${zone.zone}/`,
    ...(process.getuid?.() === 0 ? ['--user=root'] : []),
    ...Object.entries(zone.mx ?? {}).map(([domain, [exchange, priority]]) => `--mx-host=${domain},${exchange},${priority}`),
    ...Object.entries(zone.a ?? {}).map(([domain, ip]) => `--address=/${domain}/${ip}`),
  ];
  const child: ResultPromise = execa('dnsmasq', args, { reject: false, stdio: ['ignore', 'pipe', 'pipe'] });
  const address = `127.0.0.1:${port}`;
  // Ready when it answers: a query for a name of the zone gets an answer (NXDOMAIN is one).
  const resolver = new Resolver({ timeout: 500, tries: 1 });
  resolver.setServers([address]);
  await waitFor(
    async () => {
      if (child.exitCode !== null) throw new Error(`dnsmasq exited: ${String((await child).stderr)}`);
      try {
        await resolver.resolve4(`ready-probe.${zone.zone}`);
        return true;
      } catch (error) {
        return (error as NodeJS.ErrnoException).code === 'ENOTFOUND' ? true : undefined;
      }
    },
    `dnsmasq answering on ${address}`,
    20_000,
  );
  return {
    address,
    async stop() {
      child.kill('SIGTERM');
      await child;
    },
  };
}
