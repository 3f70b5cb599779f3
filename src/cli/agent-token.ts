// Where keystonectl finds the agent and its token: --agent (else the loopback address), --state-dir, --token,
// KEYSTONE_TOKEN, and the token file of the device's or the checkout's state directory. Apart from agent-client.ts,
// which speaks to the agent once these are settled.
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { API_TOKEN_FILE } from '../state-dir/layout.js';
import { checkoutStateDir, isLoopbackHost } from './checkout-state-dir.js';
import { UsageError, type CliIo } from './io.js';

export const DEFAULT_AGENT_URL = 'http://127.0.0.1:8080';
export const DEFAULT_STATE_DIR = '/var/lib/keystone';
/** The bearer token the agent writes at first start (mode 0600). */
export const TOKEN_FILE = API_TOKEN_FILE;

export interface AgentArgs {
  agent?: string | undefined;
  token?: string | undefined;
  'state-dir'?: string | undefined;
}

/**
 * The state directory the agent and keystonectl share: --state-dir when given; else the device's (/var/lib/keystone)
 * when its token is readable, else `./.state` when it is the one an agent of this user's made (the agent `npm start`
 * runs, seen from its checkout: checkout-state-dir.ts), else the device's.
 */
export function stateDirOf(args: AgentArgs, io: CliIo): string {
  if (args['state-dir'] !== undefined) return resolve(io.cwd, args['state-dir']);
  return (
    stateDirCandidates(io, true).find((c) => !('why' in c) && 'token' in readTokenFile(join(c.dir, TOKEN_FILE)))?.dir ??
    DEFAULT_STATE_DIR
  );
}

/** Where a token is looked for without --state-dir, in order; the checkout's only for an agent on this machine. */
function stateDirCandidates(io: CliIo, local: boolean): ({ dir: string } | { dir: string; why: string })[] {
  return local ? [{ dir: DEFAULT_STATE_DIR }, checkoutStateDir(io.cwd, TOKEN_FILE)] : [{ dir: DEFAULT_STATE_DIR }];
}

/** The token in `file`, or why there is none (`ENOENT`, `EACCES`, `empty`). */
function readTokenFile(file: string): { token: string } | { why: string } {
  try {
    const token = readFileSync(file, 'utf8').trim();
    return token ? { token } : { why: 'empty' };
  } catch (e) {
    return { why: (e as NodeJS.ErrnoException).code ?? (e as Error).message };
  }
}

/**
 * Where the token comes from, in order: --token, KEYSTONE_TOKEN, then `<state-dir>/api-token` when readable (without
 * --state-dir: /var/lib/keystone's, else `./.state`'s, as stateDirOf() picks).
 */
export interface TokenSource {
  token?: string;
  /** The file the token was read from. */
  file?: string;
  /** Why there is none, for the message when the agent asks for one: every file looked in, and why it gave nothing. */
  missing?: string;
  /** No --state-dir was given: the message then names it, the way to the token of an agent with another state directory. */
  searched?: boolean;
}

export function resolveToken(args: AgentArgs, io: CliIo): TokenSource {
  if (args.token) return { token: args.token };
  const env = io.env.KEYSTONE_TOKEN;
  if (env) return { token: env };
  if (args['state-dir'] !== undefined) {
    const file = join(stateDirOf(args, io), TOKEN_FILE);
    const read = readTokenFile(file);
    if ('token' in read) return { token: read.token, file };
    return { missing: read.why === 'empty' ? `${file} is empty` : `${file} is not readable (${read.why})` };
  }
  const looked: string[] = [];
  for (const candidate of stateDirCandidates(io, isLoopbackHost(agentUrl(args.agent).hostname))) {
    const file = join(candidate.dir, TOKEN_FILE);
    if ('why' in candidate) {
      looked.push(`${file} (${candidate.why})`);
      continue;
    }
    const read = readTokenFile(file);
    if ('token' in read) return { token: read.token, file };
    looked.push(`${file} (${read.why})`);
  }
  return { missing: `looked in ${looked.join(' and ')}`, searched: true };
}

export function agentUrl(text: string | undefined): URL {
  const raw = text ?? DEFAULT_AGENT_URL;
  let url: URL;
  try {
    url = new URL(raw.includes('://') ? raw : `http://${raw}`);
  } catch {
    throw new UsageError(`--agent must be a URL such as ${DEFAULT_AGENT_URL}, not "${raw}"`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new UsageError(`--agent must be an http or https URL, not "${raw}"`);
  return url;
}
