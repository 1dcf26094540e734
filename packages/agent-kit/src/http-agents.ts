// The connection pools of agent-kit's HTTP client.
import http from 'node:http';
import https from 'node:https';

/** Keep-alive agents shared by every request of the process: pollers reuse one connection. */
export const httpAgent = new http.Agent({ keepAlive: true, maxSockets: 8, scheduling: 'lifo' });
const httpsAgents = new Map<string, https.Agent>();

export function httpsAgentFor(ca: string | Buffer | undefined, insecure: boolean): https.Agent {
  const key = `${insecure}:${ca === undefined ? '' : ca.toString()}`;
  let agent = httpsAgents.get(key);
  if (agent === undefined) {
    agent = new https.Agent({ keepAlive: true, maxSockets: 8, scheduling: 'lifo', rejectUnauthorized: !insecure, ...(ca ? { ca } : {}) });
    httpsAgents.set(key, agent);
  }
  return agent;
}

/** Closes every pooled connection (idle ones never keep the process alive; this is for tests and shutdown). */
export function closeHttpConnections(): void {
  httpAgent.destroy();
  for (const agent of httpsAgents.values()) agent.destroy();
  httpsAgents.clear();
}
