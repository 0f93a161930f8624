// The console's confirmation before a node is removed (docs/api.md "Console", "Removing a node"): what the removal
// does, said before it is done, as `swarm-node nodes remove` asks in a terminal. Removal needs a recent sign-in, as
// DELETE /v1/swarm/nodes/{node_id} does: without one, the page offers the code by mail instead of the button.
import type { NodeSummary } from '../../contract/node-protocol.js';
import { html } from '../wallet-page/html.js';
import { maybeTime } from './format.js';
import { consolePage, type ConsoleFrame } from './layout.js';
import { recentSignInPanel } from './recent-sign-in.js';

export function nodeRemovePage(frame: ConsoleFrame, node: NodeSummary, recentUntil: number | undefined, alert?: string): string {
  const named = node.name ?? node.hostname ?? 'unnamed node';
  return consolePage(
    frame,
    `Remove ${named}`,
    html`<h1>Remove ${named}?</h1>
<section class="panel" aria-labelledby="effects-heading">
<h2 id="effects-heading">What removing it does</h2>
<p>Node <code>${node.node_id}</code>, ${node.online ? 'online' : 'offline'}, last seen ${maybeTime(node.last_seen_at)}.</p>
<ul>
<li>Its registrations are withdrawn: the service sends it no more runs${node.agents.length > 0 ? html` of ${node.agents.join(', ')}` : null}. A queued run that only it could take fails and is refunded.</li>
<li>A run it is working on now is failed <code>node_lost</code> and refunded when its lease runs out; finished runs stay as they are.</li>
<li>Its credential stops working: its daemon stops at its next poll. To serve again, the host must be enrolled anew.</li>
<li>It cannot be undone.</li>
</ul>
${
  recentUntil === undefined
    ? recentSignInPanel(frame.base, recentUntil, 'nodes', 'your nodes')
    : html`<form method="post" action="${frame.base}nodes/${node.node_id}/remove"><button type="submit" class="danger">Remove this node</button> <a href="${frame.base}nodes">Keep it</a></form>`
}
</section>`,
    { alert },
  );
}
