// The agent's HTTP API as the reliability tests and the chaos run call it: the bearer token from the state directory, JSON both ways.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { API_TOKEN_FILE } from '../../src/api/api-token.js';

export interface AgentApi {
  get(path: string): Promise<{ status: number; body: unknown }>;
  post(path: string): Promise<{ status: number; body: unknown }>;
}

/** One request to the agent's API on loopback with its bearer token: the status, and the body as JSON (or its text). */
export async function callAgentApi(
  port: number,
  token: string,
  method: string,
  path: string,
  timeoutMs: number,
): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}` },
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    /* not JSON: the text itself */
  }
  return { status: res.status, body };
}

/** The token is read once the agent has written it (at its start), on the first call. */
export function apiOf(stateDir: string, port: number): AgentApi {
  let token: string | undefined;
  const call = (method: string, path: string) => {
    token ??= readFileSync(join(stateDir, API_TOKEN_FILE), 'utf8').trim();
    return callAgentApi(port, token, method, path, 60_000);
  };
  return { get: (path) => call('GET', path), post: (path) => call('POST', path) };
}

/** How many health probes of `component` the agent has made so far (every result), from its open GET /metrics. */
export async function probeCount(port: number, component: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(10_000) })).text();
  let n = 0;
  for (const m of text.matchAll(/^keystone_probe_latency_seconds_count\{([^}]*)\} (\d+)$/gm))
    if (m[1]!.includes(`component="${component}"`)) n += Number(m[2]);
  return n;
}
