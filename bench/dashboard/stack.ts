// The dashboard bench's stack and what it expects of it: the example (its ports moved) or N generated stand-ins, the
// agent's RSS, a session signed in from Node, and the rows and graph nodes the page must show.
import { cpSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { BrowserContext } from 'playwright-core';
import { SESSION_COOKIE } from '../../dist/api/dashboard-sessions.js';
import { modelRepo, mulberry32 } from '../generate-repo.js';
import { projectDir } from '../lib/paths.js';
import type { ProcessComponent } from '../lib/process-repo.js';
import { rssKiB } from '../lib/processes.js';
import { median, sleep } from '../lib/stats.js';
import { EXAMPLE_PORTS, PORT_BASE } from './options.js';

/** A cookie as context.addCookies takes it. */
type Cookie = Parameters<BrowserContext['addCookies']>[0][number];

/** A session for the page: its cookies and the CSRF token it keeps in localStorage. */
export interface Session {
  cookies: Cookie[];
  csrf: string;
}
/** The rows the table must show and the graph's node count. */
export interface Expected {
  rows: string[];
  nodes: number;
}

/** The example's recipes, plans and stand-ins in `dir`, its fixed ports moved to `ports`. */
export function copyExample(dir: string, ports: number[]): string {
  for (const d of ['recipes', 'plans', 'artifacts']) cpSync(join(projectDir, d), join(dir, d), { recursive: true });
  for (const f of readdirSync(join(dir, 'recipes'))) {
    const path = join(dir, 'recipes', f);
    let text = readFileSync(path, 'utf8');
    EXAMPLE_PORTS.forEach((fixed, i) => (text = text.replaceAll(fixed, String(ports[i]))));
    writeFileSync(path, text);
  }
  return 'plans/edge-processes.toml';
}

/** N stand-ins as a layered DAG (the convergence bench's shape), short delays, a tcp/http check every second. */
export function generatedComponents(n: number): ProcessComponent[] {
  const model = modelRepo({ n, seed: 19 });
  const rand = mulberry32(19 * 7919 + n);
  const name = (i: number) => `s${String(i).padStart(2, '0')}`;
  return model.components.map((c) => ({
    name: name(c.index),
    port: PORT_BASE + 10 + c.index,
    delay: 50 + Math.floor(rand() * 250),
    check: rand() < 0.5 ? ('http' as const) : ('tcp' as const),
    interval: '1s',
    timeout: '1s',
    threshold: 30,
    dependencies: c.dependencies.map((d) => ({ on: name(d.on), type: d.type })),
  }));
}

/** VmRSS of `pid`, the median of a sample every 250 ms over `ms`. */
export async function rssOver(pid: number, ms: number): Promise<number> {
  const samples: number[] = [];
  for (let t = 0; t < ms; t += 250) {
    const r = rssKiB(pid);
    if (r !== undefined) samples.push(r);
    await sleep(250);
  }
  return median(samples);
}

/** Signs in from Node as the page would (POST /v1/session): the session cookie for context.addCookies, and the CSRF token the page keeps in localStorage. */
export async function signIn(origin: string, token: string): Promise<Session> {
  const res = await fetch(`${origin}/v1/session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ token }),
  });
  if (res.status !== 200) throw new Error(`POST /v1/session answered ${res.status}: ${await res.text()}`);
  const cookies: Cookie[] = [];
  for (const line of res.headers.getSetCookie()) {
    const [pair, ...attrs] = line.split(';').map((s) => s.trim());
    const eq = pair!.indexOf('=');
    const name = pair!.slice(0, eq);
    const a = new Map<string, string | true>(
      attrs.map((x) => [x.split('=')[0]!.toLowerCase(), x.includes('=') ? x.slice(x.indexOf('=') + 1) : true]),
    );
    cookies.push({
      name,
      value: decodeURIComponent(pair!.slice(eq + 1)),
      domain: '127.0.0.1',
      path: (a.get('path') as string | undefined) ?? '/',
      httpOnly: a.has('httponly'),
      secure: a.has('secure'),
      sameSite: 'Strict' as const,
      ...(a.has('max-age') && { expires: Math.floor(Date.now() / 1000) + Number(a.get('max-age')) }),
    });
  }
  if (!cookies.some((c) => c.name === SESSION_COOKIE))
    throw new Error(
      `POST /v1/session set no ${SESSION_COOKIE} cookie (Set-Cookie: ${res.headers.getSetCookie().join(' | ')})`,
    );
  const { csrf } = (await res.json()) as { csrf?: unknown };
  if (typeof csrf !== 'string' || !csrf) throw new Error('POST /v1/session answered no csrf');
  return { cookies, csrf };
}

/** The row names the table must show (group members have rows of their own) and the graph's node count. */
export async function expectedView(origin: string, token: string): Promise<Expected> {
  const get = async (path: string) => {
    const res = await fetch(`${origin}${path}`, { headers: { authorization: `Bearer ${token}` } });
    if (res.status !== 200) throw new Error(`GET ${path} answered ${res.status}: ${await res.text()}`);
    return res.json();
  };
  const [components, graph] = (await Promise.all([get('/v1/components'), get('/v1/graph')])) as [
    { name: string; members?: { name: string }[] }[],
    { layers: string[][] },
  ];
  const rows = components.flatMap((c) => [c.name, ...(c.members ?? []).map((m) => m.name)]);
  return { rows, nodes: graph.layers.flat().length };
}
