// The container engine's API over plain HTTP on its socket (node:http), for the agent's start: which engines answer,
// and the containers that carry a label. dockerode (and its gRPC and protobuf modules: ~5 MiB of resident memory for
// good, bench/footprint.bench.ts) is loaded only once there is a container to run, stop or remove.
import { existsSync } from 'node:fs';
import { request } from 'node:http';
import {
  describeConnectError,
  engineEndpoints,
  PING_TIMEOUT_MS,
  type Endpoint,
  type EngineKind,
  type SocketPaths,
} from './container-engine.js';
import { ContainerError } from './container-error.js';

/** An answer this big from a list of one agent's containers is not one. */
const MAX_BODY_BYTES = 16 * 1024 * 1024;

export class EngineHttpError extends Error {
  override readonly name = 'EngineHttpError';
  constructor(
    message: string,
    readonly statusCode?: number,
  ) {
    super(message);
  }
}

/** GET `path` on the engine at `ep`: its status and body. Rejects on a connection failure, a timeout or an oversized body. */
export function engineGet(ep: Endpoint, path: string, timeoutMs?: number): Promise<{ status: number; body: string }> {
  const where = 'socketPath' in ep ? { socketPath: ep.socketPath } : { host: ep.host, port: ep.port };
  return new Promise((resolve, reject) => {
    const req = request(
      { ...where, path, method: 'GET', ...(timeoutMs !== undefined && { timeout: timeoutMs }) },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          size += c.length;
          if (size > MAX_BODY_BYTES)
            req.destroy(new EngineHttpError(`the engine's answer to ${path} is over ${MAX_BODY_BYTES} bytes`));
          else chunks.push(c);
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () =>
      req.destroy(new EngineHttpError(`the engine did not answer ${path} within ${timeoutMs} ms`)),
    );
    req.on('error', reject);
    req.end();
  });
}

/** Does the engine at `ep` answer its ping (GET /_ping, 200) within PING_TIMEOUT_MS, as connectEngine asks it? */
async function answers(ep: Endpoint): Promise<boolean> {
  if ('socketPath' in ep && !existsSync(ep.socketPath)) return false;
  try {
    return (await engineGet(ep, '/_ping', PING_TIMEOUT_MS)).status === 200;
  } catch {
    return false;
  }
}

/**
 * KS_CONTAINER_ENGINE_UNAVAILABLE as connectEngine('auto') words it, each endpoint with why it did not answer: for a
 * start on a device whose engine sockets are there but nothing answers on them (the engine stopped, a stale file),
 * which would otherwise load dockerode (~4 MiB resident for good, bench/footprint.bench.mjs) only to say so.
 */
export async function engineUnavailable(opts: {
  env?: NodeJS.ProcessEnv;
  socketPaths?: SocketPaths;
}): Promise<ContainerError> {
  const { endpoints, unusable } = engineEndpoints('auto', opts.env ?? process.env, opts.socketPaths);
  const tried = [...unusable];
  for (const ep of endpoints) {
    if ('socketPath' in ep && !existsSync(ep.socketPath)) {
      tried.push(`${ep.label} (no such socket)`);
      continue;
    }
    try {
      const { status } = await engineGet(ep, '/_ping', PING_TIMEOUT_MS);
      tried.push(`${ep.label} (${status === 200 ? 'answered only now' : `HTTP ${status}`})`);
    } catch (e) {
      tried.push(`${ep.label} (${describeConnectError(e)})`);
    }
  }
  return new ContainerError(
    'KS_CONTAINER_ENGINE_UNAVAILABLE',
    `no Docker or Podman engine answered; tried ${tried.join(', ')}`,
    { tried },
  );
}

/**
 * Docker's and Podman's engines that answer, the first endpoint of each in connectEngine's order, each once (a Podman
 * socket may serve both names). Empty when none answers.
 */
export async function answeringEndpoints(opts: {
  env?: NodeJS.ProcessEnv;
  socketPaths?: SocketPaths;
}): Promise<Endpoint[]> {
  const out: Endpoint[] = [];
  for (const choice of ['docker', 'podman'] as const) {
    for (const ep of engineEndpoints(choice, opts.env ?? process.env, opts.socketPaths).endpoints) {
      if (!(await answers(ep))) continue;
      if (!out.some((o) => o.label === ep.label)) out.push(ep);
      break;
    }
  }
  return out;
}

/** A container as the engine lists it (GET /containers/json), the fields the agent reads. */
export interface ListedContainer {
  Id: string;
  Names: string[];
  Labels: Record<string, string>;
  State: string;
  engine: EngineKind;
}

/** Every container (running or not) on the engine at `ep` that carries `label` (`key=value`). */
export async function listLabelled(ep: Endpoint, label: string): Promise<ListedContainer[]> {
  const filters = encodeURIComponent(JSON.stringify({ label: [label] }));
  const { status, body } = await engineGet(ep, `/containers/json?all=true&filters=${filters}`);
  if (status !== 200)
    throw new EngineHttpError(`${ep.label}: listing containers: HTTP ${status}: ${engineReason(body)}`, status);
  const list = JSON.parse(body) as unknown;
  if (!Array.isArray(list)) throw new EngineHttpError(`${ep.label}: listing containers: the answer is not a list`);
  return list.map((c: Partial<ListedContainer>) => ({
    Id: String(c.Id ?? ''),
    Names: c.Names ?? [],
    Labels: c.Labels ?? {},
    State: String(c.State ?? ''),
    engine: ep.kind,
  }));
}

/** The engine's own message (`{"message": …}`), else the body's start. */
function engineReason(body: string): string {
  try {
    const m = (JSON.parse(body) as { message?: unknown }).message;
    if (typeof m === 'string') return m;
  } catch {
    // not JSON
  }
  return body.slice(0, 200).trim();
}
