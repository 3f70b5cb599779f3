// The connection pools the Git client uses. Not Node's global agents: since Node 19 they close a socket that is
// silent for 5 s, and isomorphic-git's HTTP layer turns that into "Request timed out" — so a Git host that takes
// longer than 5 s to start answering (a busy server, a fleet of thousands polling it) failed every look and every
// report. Each operation has its own deadline (TransferBudget, the reporter's), which is what bounds a transfer.
import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';

const http = new HttpAgent({ keepAlive: true, keepAliveMsecs: 1_000, maxFreeSockets: 4 });
const https = new HttpsAgent({ keepAlive: true, keepAliveMsecs: 1_000, maxFreeSockets: 4 });

/** The agent for a request to `url`. */
export function gitHttpAgent(url: string): HttpAgent {
  return /^https:/i.test(url) ? https : http;
}
