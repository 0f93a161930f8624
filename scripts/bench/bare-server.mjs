// The baseline for scripts/bench/execute.ts: bare node:http answering one canned execute response, after reading
// the request body as svc-api does. Prints "listening on <url>" when ready; the response comes from
// BENCH_CANNED_RESPONSE so both servers send the same bytes.
import { createServer } from 'node:http';

const body = Buffer.from(process.env.BENCH_CANNED_RESPONSE ?? '{}');
const server = createServer((request, response) => {
  request.on('data', () => {});
  request.on('end', () => {
    response.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': body.length });
    response.end(body);
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`listening on http://127.0.0.1:${server.address().port}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
