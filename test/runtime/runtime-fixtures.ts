// Shared fixtures of the runtime tests: components from recipe input, temp roots, process cleanup, deadline polls.
import { chmod, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type * as v from 'valibot';
import type { DesiredComponent } from '../../src/core/desired-state.js';
import { recipeSchema, type Recipe } from '../../src/core/recipe.js';
import { listProcesses } from '../../src/runtime/proc-identity.js';
import type { ComponentPaths } from '../../src/runtime/runtime.js';
import { parse as parseSchema } from '../../src/core/valid.js';

export type RecipeInput = v.InferInput<typeof recipeSchema>;
type RunInput = NonNullable<NonNullable<RecipeInput['lifecycle']>['run']>;

export const isRoot = process.getuid?.() === 0;

/** A process component through the real schema (defaults and millisecond durations as in production). */
export function processComponent(
  name: string,
  exec: { command: string; args?: string[]; env?: Record<string, string> },
  more: {
    security?: RunInput['security'];
    install?: { script: string; timeout?: string };
    health?: RunInput['health'];
  } = {},
): DesiredComponent {
  const raw: RecipeInput = {
    metadata: { name: `com.test.${name}`, version: '1.0.0' },
    lifecycle: {
      run: {
        type: 'process',
        exec,
        ...(more.security && { security: more.security }),
        ...(more.health && { health: more.health }),
      },
      ...(more.install && { install: more.install }),
    },
  };
  const recipe = parseSchema(recipeSchema, raw) as Recipe;
  return {
    name,
    index: 0,
    recipePath: `recipes/${name}.toml`,
    entry: { name, recipe: `recipes/${name}.toml` },
    recipe,
    dependencies: [],
    hash: 'test',
  };
}

/** A temp root the run user (nobody) can traverse, with a work and a log directory per component. */
export async function tempRoot(): Promise<{
  root: string;
  paths(name: string): ComponentPaths;
  cleanup(): Promise<void>;
}> {
  const root = await mkdtemp(join(tmpdir(), 'ks-runtime-'));
  await chmod(root, 0o755);
  return {
    root,
    paths: (name) => ({ workDir: join(root, 'work', name), logDir: join(root, 'logs', name) }),
    cleanup: () => rm(root, { recursive: true, force: true }),
  };
}

/** Polls `fn` until it returns a truthy value or `timeoutMs` passes (then throws with `what`). */
export async function waitFor<T>(
  fn: () => T | Promise<T>,
  what: string,
  timeoutMs = 5000,
  pollMs = 20,
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, pollMs));
  }
}

/** Reads a file, or '' when it does not exist (yet). */
export async function readOr(path: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch {
    return '';
  }
}

/** The live members of process group or session `pid` (zombies excluded). */
export function liveGroup(pid: number): number[] {
  return listProcesses()
    .filter((p) => (p.pgrp === pid || p.session === pid) && p.state !== 'Z' && p.state !== 'X')
    .map((p) => p.pid);
}

/** Remembers the groups a test started and SIGKILLs them all afterwards. */
export class GroupReaper {
  private readonly groups = new Set<number>();
  add(pid: number): number {
    this.groups.add(pid);
    return pid;
  }
  async killAll(): Promise<void> {
    for (const pid of this.groups) {
      for (const target of [-pid, ...liveGroup(pid)]) {
        try {
          process.kill(target, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    }
    const pids = [...this.groups];
    this.groups.clear();
    await waitFor(() => pids.every((p) => liveGroup(p).length === 0), 'test processes to die');
  }
}

/** The value of one field of /proc/<pid>/status. */
export async function procStatus(pid: number, field: string): Promise<string | undefined> {
  const text = await readOr(`/proc/${pid}/status`);
  return new RegExp(`^${field}:\\s*(.*)$`, 'm').exec(text)?.[1]?.trim();
}
