import { createHash } from 'node:crypto';
import https from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';

/**
 * An idle kept-alive connection is closed after this long: well under the idle limits of API
 * servers and the load balancers before them, so a request is not sent on a connection the other
 * side is closing.
 */
const IDLE_MS = 15_000;
/**
 * API connections per TLS identity, whatever the concurrency: requests beyond wait in the agent's
 * queue (on loopback one connection carries ~200 requests/s). With the backend's one pod watch and
 * its restarts, a backend instance holds at most MAX_SOCKETS + 2 API connections besides exec streams.
 */
export const MAX_SOCKETS = 12;

/**
 * API calls on kept-alive connections. client-node 1.4 makes a new https.Agent for every call, so
 * every call pays a TCP and TLS handshake (a pod read: ~30 ms instead of ~10 on the test cluster,
 * which is most of a warm pool's claim). Here one keep-alive agent per TLS identity (CA, client
 * certificate, server name...) serves every call; a call through a proxy keeps the agent
 * client-node made. Exec WebSockets are untouched (they take their own connection). Returns what
 * closes the kept connections.
 */
export function keepConnectionsAlive(kc: KubeConfig): () => void {
  const agents = new Map<string, https.Agent>();
  const original = kc.applySecurityAuthentication.bind(kc);
  kc.applySecurityAuthentication = async (context) => {
    await original(context);
    const made = context.getAgent();
    // Only client-node's plain https.Agent: proxy agents (subclasses) stay as they are.
    if (!made || made.constructor !== https.Agent) return;
    const o = (made as https.Agent).options;
    const identity = createHash('sha256')
      .update(JSON.stringify([o.ca, o.cert, o.key, o.pfx, o.passphrase, o.rejectUnauthorized, o.servername, o.ciphers]))
      .digest('hex');
    let kept = agents.get(identity);
    if (!kept) {
      kept = new https.Agent({ ...o, keepAlive: true, timeout: IDLE_MS, maxSockets: MAX_SOCKETS, maxFreeSockets: MAX_SOCKETS });
      agents.set(identity, kept);
    }
    context.setAgent(kept);
  };
  return () => {
    for (const agent of agents.values()) agent.destroy();
    agents.clear();
  };
}
