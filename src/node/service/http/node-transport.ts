// Requests over Node's own http and https, for a command that sends a few and exits: nothing to load or compile
// first (./transport.ts says why not undici here). Through the proxy of the environment (./proxy-env.ts) by a
// CONNECT tunnel per request, as undici's EnvHttpProxyAgent does for both schemes; direct connections are kept
// alive between the requests of one command (a run and its polls) and freed at close.
import { Agent as HttpAgent, request as httpRequest, type ClientRequest, type IncomingMessage, type RequestOptions } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { proxyFor } from './proxy-env.js';
import { networkError, type Transport, type TransportRequest, type TransportResponse } from './transport.js';

export class NodeTransport implements Transport {
  readonly #env: NodeJS.ProcessEnv;
  readonly #http = new HttpAgent({ keepAlive: true });
  readonly #https = new HttpsAgent({ keepAlive: true });
  readonly #inFlight = new Set<ClientRequest>();

  constructor(env: NodeJS.ProcessEnv = process.env) {
    this.#env = env;
  }

  async send(request: TransportRequest): Promise<TransportResponse> {
    const target = new URL(request.url);
    const proxy = proxyFor(target, this.#env);
    const tunnel = proxy === undefined ? undefined : await this.#tunnel(proxy, target, request);
    return this.#exchange(target, request, tunnel);
  }

  async close(): Promise<void> {
    this.#http.destroy();
    this.#https.destroy();
  }

  async destroy(): Promise<void> {
    for (const request of this.#inFlight) request.destroy(networkError('the call was given up', 'UND_ERR_ABORTED'));
    await this.close();
  }

  /** A CONNECT tunnel through the proxy to the target's host and port; over TLS when the target is https. */
  #tunnel(proxy: URL, target: URL, request: TransportRequest): Promise<Socket> {
    const https = target.protocol === 'https:';
    const authority = `${target.hostname}:${target.port || (https ? 443 : 80)}`;
    const headers: Record<string, string> = { host: authority };
    if (proxy.username !== '') {
      const credentials = `${decodeURIComponent(proxy.username)}:${decodeURIComponent(proxy.password)}`;
      headers['proxy-authorization'] = `Basic ${Buffer.from(credentials).toString('base64')}`;
    }
    return new Promise((resolve, reject) => {
      const connect = (proxy.protocol === 'https:' ? httpsRequest : httpRequest)({
        host: proxy.hostname,
        port: proxy.port || (proxy.protocol === 'https:' ? 443 : 80),
        method: 'CONNECT',
        path: authority,
        headers,
        agent: false,
        signal: request.signal,
      });
      const timer = setTimeout(
        () => connect.destroy(networkError(`no tunnel through the proxy within ${request.connectTimeoutMs} ms`, 'UND_ERR_CONNECT_TIMEOUT')),
        request.connectTimeoutMs,
      );
      connect.once('connect', (response: IncomingMessage, socket: Socket, head: Buffer) => {
        clearTimeout(timer);
        if (response.statusCode !== 200) {
          socket.destroy();
          reject(networkError(`the proxy at ${proxy.host} refused a tunnel to ${authority} (${response.statusCode})`, 'EPROXYREFUSED'));
          return;
        }
        if (head.length > 0) socket.unshift(head);
        resolve(https ? tlsConnect({ socket, servername: target.hostname }) : socket);
      });
      connect.once('error', (error) => {
        clearTimeout(timer);
        reject(error);
      });
      connect.end();
    });
  }

  #exchange(target: URL, request: TransportRequest, tunnel: Socket | undefined): Promise<TransportResponse> {
    const https = target.protocol === 'https:';
    const headers: Record<string, string | number> = { ...request.headers };
    const { body } = request;
    if (typeof body === 'string' || Buffer.isBuffer(body)) headers['content-length'] = Buffer.byteLength(body);
    const options: RequestOptions = {
      method: request.method,
      headers,
      signal: request.signal,
      ...(tunnel === undefined ? { agent: https ? this.#https : this.#http } : { agent: false, createConnection: () => tunnel }),
    };
    return new Promise((resolve, reject) => {
      const outgoing = (https ? httpsRequest : httpRequest)(target, options);
      this.#inFlight.add(outgoing);
      // One timer, two phases: the connection (a reused or tunnelled one is there already), then the headers.
      let timer: NodeJS.Timeout | undefined;
      const waitFor = (what: string, ms: number, code: string): void => {
        clearTimeout(timer);
        timer = setTimeout(() => outgoing.destroy(networkError(`no ${what} within ${ms} ms`, code)), ms);
      };
      const connected = (): void => waitFor('answer', request.headersTimeoutMs, 'UND_ERR_HEADERS_TIMEOUT');
      outgoing.once('socket', (socket: Socket) => {
        if (tunnel !== undefined || !socket.connecting) connected();
        else {
          waitFor('connection', request.connectTimeoutMs, 'UND_ERR_CONNECT_TIMEOUT');
          socket.once('connect', connected);
        }
      });
      const fail = (error: Error): void => {
        clearTimeout(timer);
        tunnel?.destroy();
        this.#inFlight.delete(outgoing);
        reject(error);
      };
      outgoing.once('error', fail);
      outgoing.once('response', (response: IncomingMessage) => {
        clearTimeout(timer);
        // Read (or destroyed) by the caller; once it is done with it, the request is no longer in flight.
        response.once('close', () => {
          this.#inFlight.delete(outgoing);
          // A tunnel serves one request: kept open, it would hold the command's exit until the proxy closed it.
          tunnel?.destroy();
        });
        resolve({ statusCode: response.statusCode ?? 0, headers: response.headers, body: response });
      });
      if (body === undefined || typeof body === 'string' || Buffer.isBuffer(body)) outgoing.end(body);
      else {
        // A body that fails while it is read (a file that changed) fails the request, never sends it short.
        body.once('error', (error) => outgoing.destroy(error));
        body.pipe(outgoing);
      }
    });
  }
}
