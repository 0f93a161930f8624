// Requests Node's HTTP parser refuses before fastify sees them (headers over Node's limit, 16 KiB by default; a
// garbage request line; a request that never finished arriving) still answer as problem details, like every other
// error of the service (docs/decisions/0003-errors-as-problem-details.md). No reply object exists yet: the response
// is written raw on the socket, which then closes, since the rest of the byte stream cannot be trusted to start a
// next request.
import { STATUS_CODES, maxHeaderSize } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyBaseLogger } from 'fastify';
import { SvcError } from '../../contract/errors.js';

interface ClientError extends Error {
  code?: string;
}

/** For fastify's `clientErrorHandler`, which passes the error and the raw socket. */
export function clientErrorHandler(log: () => FastifyBaseLogger): (error: ClientError, socket: Socket) => void {
  return (error, socket) => {
    // A reset peer, or a socket already answered and closing: nothing to say, no one to say it to.
    if (error.code === 'ECONNRESET' || socket.destroyed || socket.writableEnded) return;
    if (!socket.writable) {
      socket.destroy();
      return;
    }
    const svcError = clientErrorToSvcError(error);
    // A client's mistake, not the service's: debug only, and never the raw bytes (they may hold a token).
    log().debug({ code: error.code, status: svcError.status }, 'refused an unparseable request');
    const body = JSON.stringify(svcError.toProblem());
    const head = [
      `HTTP/1.1 ${svcError.status} ${STATUS_CODES[svcError.status] ?? 'Error'}`,
      'Content-Type: application/problem+json; charset=utf-8',
      `Content-Length: ${Buffer.byteLength(body)}`,
      'Connection: close',
    ].join('\r\n');
    // Closed once the answer is flushed, not at once: destroying right after the write could drop the answer.
    socket.end(`${head}\r\n\r\n${body}`, () => socket.destroy());
  };
}

function clientErrorToSvcError(error: ClientError): SvcError {
  switch (error.code) {
    case 'HPE_HEADER_OVERFLOW':
      return new SvcError('headers_too_large', `the request headers are larger than ${maxHeaderSize / 1024} KiB`);
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new SvcError('invalid_request', 'the request did not arrive in time', {
        status: 408,
        remedy: 'Send the whole request promptly, then retry.',
      });
    default:
      return new SvcError('invalid_request', 'the request is not valid HTTP/1.1', {
        remedy: 'Send a well-formed HTTP request (see docs/api.md).',
      });
  }
}
