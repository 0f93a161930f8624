// The guard of every connection to a URL a user gave (docs/api.md "Webhooks"): which addresses it lets through, with
// and without the operator's --webhook-allow-private, IPv4 carried inside IPv6 judged as that IPv4; and that a
// connection made with its lookup, by net or by an undici Agent, never reaches an address it refuses.
import { connect } from 'node:net';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addressRefusal, guardedConnection, guardedLookup, OutboundRefused } from '../../src/api/http/outbound-guard.js';
import { startByteCounter, type ByteCounter } from '../helpers/https-receiver.js';

const STRICT = { allowPrivate: false };
const OPERATOR_ALLOWS = { allowPrivate: true };

describe('the outbound guard', () => {
  let counter: ByteCounter;
  beforeAll(async () => {
    counter = await startByteCounter();
  });
  afterAll(() => counter.close());

  // [address, refused by default, refused when the operator allows private addresses]
  const cases: Array<[string, boolean, boolean]> = [
    ['8.8.8.8', false, false],
    ['2606:4700::1111', false, false],
    ['127.0.0.1', true, false],
    ['10.1.2.3', true, false],
    ['169.254.169.254', true, false],
    ['100.64.0.1', true, false],
    ['::1', true, false],
    ['fd00::1', true, false],
    ['fe80::1', true, false],
    ['0.0.0.0', true, true],
    ['::', true, true],
    ['224.0.0.1', true, true],
    ['ff02::1', true, true],
    // IPv4-compatible, IPv4-mapped, IPv4-translated, NAT64 and 6to4: the IPv4 address they carry decides.
    ['::7f00:1', true, false],
    ['::a9fe:a9fe', true, false],
    ['::808:808', false, false],
    ['::ffff:127.0.0.1', true, false],
    ['::ffff:808:808', false, false],
    ['::ffff:0:a00:1', true, false],
    ['64:ff9b::7f00:1', true, false],
    ['64:ff9b::a9fe:a9fe', true, false],
    ['64:ff9b::808:808', false, false],
    ['64:ff9b::e000:1', true, true],
    ['2002:7f00:1::1', true, false],
    ['2002:c0a8:101:5::9', true, false],
    ['2002:808:808::1', false, false],
  ];
  it.each(cases)('%s: refused %s, with private addresses allowed %s', (address, strict, lenient) => {
    expect(addressRefusal(address, STRICT) !== undefined).toBe(strict);
    expect(addressRefusal(address, OPERATOR_ALLOWS) !== undefined).toBe(lenient);
  });

  it('names the IPv4 address an IPv6 one carries, for the operator', () => {
    expect(addressRefusal('::7f00:1', STRICT)).toMatch(/^::7f00:1 carries 127\.0\.0\.1, a loopback address/);
  });

  it('refuses an address written in the URL before anything connects; a name is left to the lookup', () => {
    expect(() => guardedConnection(new URL('https://[::127.0.0.1]/hook'), STRICT)).toThrow(OutboundRefused);
    expect(() => guardedConnection(new URL('https://2130706433/hook'), STRICT)).toThrow(/127\.0\.0\.1 is a loopback address/);
    expect(guardedConnection(new URL('https://[::127.0.0.1]/hook'), OPERATOR_ALLOWS)).toHaveProperty('lookup');
    expect(guardedConnection(new URL('https://localhost/hook'), STRICT)).toHaveProperty('lookup');
  });

  it('resolves a name and hands back only the addresses allowed', async () => {
    const lookup = (policy: typeof STRICT, all: boolean) =>
      new Promise<unknown>((resolve, reject) =>
        guardedLookup(policy)('localhost', { all }, (error, address) => (error === null ? resolve(address) : reject(error))),
      );
    const refused = { code: 'EOUTBOUNDREFUSED', message: expect.stringContaining('127.0.0.1 is a loopback address') };
    await expect(lookup(STRICT, true)).rejects.toMatchObject(refused);
    expect(await lookup(OPERATOR_ALLOWS, true)).toEqual([{ address: '127.0.0.1', family: 4 }]);
    expect(await lookup(OPERATOR_ALLOWS, false)).toBe('127.0.0.1');
  });

  it('keeps a connection by net or by an undici Agent from a refused address: not one byte, not one connection', async () => {
    const refusedByNet = await new Promise<NodeJS.ErrnoException>((resolve, reject) => {
      const socket = connect({ host: 'localhost', port: counter.port, lookup: guardedLookup(STRICT) });
      socket.once('connect', () => reject(new Error('connected')));
      socket.once('error', resolve);
    });
    expect(refusedByNet.code).toBe('EOUTBOUNDREFUSED');
    const agent = new Agent({ connect: { lookup: guardedLookup(STRICT) } });
    try {
      const sent = request(`https://localhost:${counter.port}/`, { dispatcher: agent });
      await expect(sent).rejects.toMatchObject({ code: 'EOUTBOUNDREFUSED' });
    } finally {
      await agent.close();
    }
    expect({ connections: counter.connections, bytes: counter.bytes }).toEqual({ connections: 0, bytes: 0 });
  });
});
