// The fair yardstick of scripts/bench/execute.ts: a bare dispatch server on node:http, in memory, doing the three
// exchanges of a run and nothing else. It holds the execute, hands the run to a node's long poll (one held poll
// woken per queued run; a poll takes what is queued up to its capacity), and answers the execute when the node
// reports the result. No store, no money, no checks: what a run costs the service beyond this is svc-api's own.
// It speaks the few calls of the node protocol the stand-in node makes (deploy token, enroll, serve an agent, poll,
// result), each user told apart by the bearer it was given. Prints "listening on <url>" when ready; the execute's
// answer comes from BENCH_CANNED_RESPONSE so both servers send the same bytes.
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';

const answer = Buffer.from(process.env.BENCH_CANNED_RESPONSE ?? '{}');
/** Per user (its bearer): runs waiting for a poll, and polls waiting for a run. */
const users = new Map();
/** run_id → the execute's response, held until the node's result. */
const held = new Map();

function userOf(bearer) {
  // Deploy tokens and node credentials carry their user after a prefix: "deploy:<user>", "node:<user>".
  const key = bearer.replace(/^(deploy|node):/, '');
  let user = users.get(key);
  if (user === undefined) users.set(key, (user = { queued: [], polls: [] }));
  return { key, user };
}

function send(response, status, body) {
  const bytes = Buffer.isBuffer(body) ? body : Buffer.from(JSON.stringify(body));
  response.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': bytes.length });
  response.end(bytes);
}

/** Hands the poll up to its capacity of queued runs. */
function handOut(poll, user) {
  clearTimeout(poll.timer);
  const runs = user.queued.splice(0, poll.capacity);
  send(poll.response, 200, { runs, lost: [], lease_seconds: 45 });
}

function route(request, response, body) {
  const bearer = (request.headers.authorization ?? '').replace(/^Bearer /, '');
  const { url, method } = request;
  if (method === 'POST' && url === '/v1/swarm/execute') {
    const { user } = userOf(bearer);
    const parsed = JSON.parse(body);
    const run = {
      run_id: randomUUID(),
      agent_id: parsed.agent_id,
      user_id: parsed.user_id,
      input: parsed.input ?? {},
      lease_id: randomUUID(),
      lease_expires_at: new Date().toISOString(),
      attempt: 1,
    };
    held.set(run.run_id, response);
    user.queued.push(run);
    const poll = user.polls.shift();
    if (poll !== undefined) handOut(poll, user);
    return;
  }
  if (method === 'POST' && url === '/v1/swarm/nodes/poll') {
    const { user } = userOf(bearer);
    const { capacity, wait_seconds: waitSeconds } = JSON.parse(body);
    const poll = { response, capacity, timer: undefined };
    if (user.queued.length > 0 || capacity === 0) return handOut(poll, user);
    poll.timer = setTimeout(
      () => {
        user.polls.splice(user.polls.indexOf(poll), 1);
        handOut(poll, user);
      },
      (waitSeconds ?? 20) * 1000,
    );
    user.polls.push(poll);
    return;
  }
  const result = /^\/v1\/swarm\/runs\/([^/]+)\/result$/.exec(url);
  if (method === 'POST' && result !== null) {
    const execute = held.get(result[1]);
    held.delete(result[1]);
    if (execute !== undefined) send(execute, 200, answer);
    return send(response, 200, answer);
  }
  if (method === 'POST' && url === '/v1/swarm/nodes/deploy-token')
    return send(response, 201, { deploy_token: `deploy:${userOf(bearer).key}` });
  if (method === 'POST' && url === '/v1/swarm/nodes/enroll') return send(response, 201, { node_credential: `node:${userOf(bearer).key}` });
  if (method === 'PUT' && url.startsWith('/v1/swarm/nodes/self/agents/')) return send(response, 200, {});
  send(response, 404, { error: 'not_found' });
}

const server = createServer((request, response) => {
  const chunks = [];
  request.on('data', (chunk) => chunks.push(chunk));
  request.on('end', () => route(request, response, Buffer.concat(chunks).toString('utf8')));
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`listening on http://127.0.0.1:${server.address().port}\n`);
});
process.on('SIGTERM', () => {
  server.closeAllConnections();
  server.close(() => process.exit(0));
});
