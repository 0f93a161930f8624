// Requests over undici's pooled dispatcher, for the daemon: connections kept open across months of polls, and the
// proxy of the environment (http_proxy/https_proxy unless no_proxy names the host) through EnvHttpProxyAgent.
import { EnvHttpProxyAgent, request } from 'undici';
import type { Transport, TransportRequest, TransportResponse } from './transport.js';

export class UndiciTransport implements Transport {
  readonly #dispatcher: EnvHttpProxyAgent;

  constructor(options: { connectTimeoutMs: number }) {
    this.#dispatcher = new EnvHttpProxyAgent({ connect: { timeout: options.connectTimeoutMs } });
  }

  async send(outgoing: TransportRequest): Promise<TransportResponse> {
    const response = await request(outgoing.url, {
      method: outgoing.method as 'GET',
      headers: outgoing.headers,
      body: outgoing.body,
      dispatcher: this.#dispatcher,
      signal: outgoing.signal,
      headersTimeout: outgoing.headersTimeoutMs,
      bodyTimeout: outgoing.bodyTimeoutMs ?? outgoing.headersTimeoutMs,
    });
    return { statusCode: response.statusCode, headers: response.headers, body: response.body };
  }

  async close(): Promise<void> {
    await this.#dispatcher.close();
  }

  async destroy(): Promise<void> {
    await this.#dispatcher.destroy();
  }
}
