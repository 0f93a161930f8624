// A man in the middle of an http:// base URL: an HTTP server in front of the real svc-api that passes every request
// through unchanged except those a test answers itself (another release than the one named, a body that does not
// end). The node under test is pointed at it as at its service; nothing of the node is replaced.
import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';

export interface Interposer {
  url: string;
  close(): Promise<void>;
}

/** `answer` returns true when it answered the request itself; otherwise the request goes to `target`. */
export async function startInterposer(
  target: string,
  answer: (req: IncomingMessage, res: ServerResponse) => Promise<boolean>,
): Promise<Interposer> {
  const upstream = new URL(target);
  const server = createServer((req, res) => {
    void answer(req, res).then((answered) => {
      if (answered) return;
      const forwarded = request(
        {
          host: upstream.hostname,
          port: upstream.port,
          method: req.method,
          path: req.url,
          headers: { ...req.headers, host: upstream.host },
        },
        (reply) => {
          res.writeHead(reply.statusCode ?? 502, reply.headers);
          reply.pipe(res);
        },
      );
      forwarded.on('error', () => res.destroy());
      req.pipe(forwarded);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('the interposer has no port');
  return {
    url: `http://127.0.0.1:${address.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** GETs `path` of `target` with the request's own authorization, as the interposer would have passed it on. */
export async function fetchUpstream(target: string, req: IncomingMessage, path: string = req.url ?? '/'): Promise<Response> {
  const authorization = req.headers.authorization;
  return fetch(`${target}${path}`, { headers: authorization === undefined ? {} : { authorization } });
}

/**
 * Answers GET /v1/swarm/releases/latest with what the service answers, but for the version, which it says is
 * `version`: true when the request was that one (and is answered), false for any other.
 */
export async function claimLatest(target: string, req: IncomingMessage, res: ServerResponse, version: string): Promise<boolean> {
  if (new URL(req.url ?? '/', 'http://x').pathname !== '/v1/swarm/releases/latest') return false;
  const latest = (await (await fetchUpstream(target, req)).json()) as Record<string, unknown>;
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ...latest, version }));
  return true;
}

/** Answers with the service's own answer to `path` instead of the one asked for (another release's file). */
export async function answerWith(target: string, req: IncomingMessage, res: ServerResponse, path: string): Promise<true> {
  const upstream = await fetchUpstream(target, req, path);
  res.writeHead(upstream.status).end(Buffer.from(await upstream.arrayBuffer()));
  return true;
}

/**
 * Answers GET /v1/swarm/releases/latest with the service's own answer laid out another way, as JSON may be:
 * pretty-printed, its keys in reverse order (the version last). Everything else passes through.
 */
export function startRelayout(target: string): Promise<Interposer> {
  return startInterposer(target, async (req, res) => {
    if (new URL(req.url ?? '/', 'http://x').pathname !== '/v1/swarm/releases/latest') return false;
    const latest = (await (await fetchUpstream(target, req)).json()) as Record<string, unknown>;
    const reversed = Object.fromEntries(Object.entries(latest).reverse());
    res.writeHead(200, { 'content-type': 'application/json' }).end(`${JSON.stringify(reversed, null, 2)}\n`);
    return true;
  });
}

/** A service that says `claimed` is its newest release and serves the files of `served` under `claimed`'s names. */
export function startVersionLiar(target: string, claimed: string, served: string): Promise<Interposer> {
  return startInterposer(target, async (req, res) => {
    if (await claimLatest(target, req, res, claimed)) return true;
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    return path.startsWith(`/v1/swarm/releases/${claimed}/`) && answerWith(target, req, res, path.replaceAll(claimed, served));
  });
}

/**
 * Answers 200 with `total` bytes (generated as they go, never held), until they are all written or the client
 * hangs up: resolves with how many bytes the connection took, and whether the client hung up first.
 */
export function sendEndlessBody(
  res: ServerResponse,
  total: number,
  contentType = 'application/octet-stream',
): Promise<{ sent: number; hungUp: boolean }> {
  const chunk = Buffer.alloc(64 * 1024, 0x41);
  let sent = 0;
  return new Promise((resolve) => {
    let finished = false;
    const done = (hungUp: boolean): void => {
      if (finished) return;
      finished = true;
      resolve({ sent, hungUp });
    };
    res.on('close', () => done(sent < total));
    res.writeHead(200, { 'content-type': contentType });
    const pump = (): void => {
      while (sent < total && !res.destroyed) {
        const piece = chunk.subarray(0, Math.min(chunk.length, total - sent));
        sent += piece.length;
        if (!res.write(piece)) return void res.once('drain', pump);
      }
      if (sent >= total) res.end(() => done(false));
    };
    pump();
  });
}
