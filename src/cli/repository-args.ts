// Shared handling of `--repo DIR` and a PLAN argument, the way every repository command reads them.
import { readdirSync } from 'node:fs';
import { isAbsolute, relative, resolve, sep } from 'node:path';
import { UsageError } from './io.js';

/** The repository root: `--repo` or the current directory. */
export function repoRoot(cwd: string, repo: string | undefined): string {
  return resolve(cwd, repo ?? '.');
}

/**
 * A plan path as the repository knows it (relative to its root, `/`-separated). An absolute path
 * must lie inside the repository; a relative one is taken from the repository root.
 */
export function planPathIn(root: string, plan: string): string {
  if (!isAbsolute(plan)) return plan.split(sep).join('/');
  const rel = relative(root, plan);
  if (rel.startsWith('..') || isAbsolute(rel)) throw new UsageError(`${plan} is not inside the repository ${root}`);
  return rel.split(sep).join('/');
}

/** `graph` without a PLAN: the repository's only plan, or a usage error naming the choices. */
export function defaultPlan(root: string): string {
  let plans: string[] = [];
  try {
    plans = readdirSync(resolve(root, 'plans'))
      .filter((f) => f.endsWith('.toml'))
      .sort();
  } catch {
    /* no plans directory: reported below */
  }
  if (plans.length === 1) return `plans/${plans[0]}`;
  throw new UsageError(
    plans.length === 0
      ? `no PLAN given and ${root}/plans holds no plan`
      : `no PLAN given; choose one of: ${plans.map((p) => `plans/${p}`).join(', ')}`,
  );
}
