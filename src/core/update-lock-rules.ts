// What a recipe's update lock (SPEC §19) needs beyond its shape: a container sees the lock's directory mounted at the
// same path from its root (`tmp/balena/updates.lock` is /tmp/balena/updates.lock inside, balena's own path), so its
// lock needs a directory, and not one the container's system lives in.
import { CODES, type Diagnostic } from './errors.js';
import type { ParsedDocument } from './toml-document.js';

/** Top-level directories a mount must not cover: the container would lose its programs, libraries or kernel views. */
const SYSTEM_DIRS: ReadonlySet<string> = new Set([
  'bin',
  'boot',
  'dev',
  'etc',
  'lib',
  'lib32',
  'lib64',
  'libx32',
  'proc',
  'root',
  'sbin',
  'sys',
  'usr',
  'var',
]);

type RawTable = Record<string, unknown>;

/** Where a container sees the directory of `lock` (undefined: it has none). */
export function containerLockDir(lock: string): string | undefined {
  const i = lock.lastIndexOf('/');
  return i <= 0 ? undefined : `/${lock.slice(0, i)}`;
}

/** The lock of a recipe whose run (or any service) is a container. */
export function updateLockRules(
  doc: ParsedDocument<unknown>,
  update: RawTable | undefined,
  runs: ReadonlyArray<RawTable | undefined>,
): Diagnostic[] {
  const lock = update?.lock;
  if (typeof lock !== 'string' || !runs.some((r) => r?.type === 'container')) return [];
  const dir = containerLockDir(lock);
  const at = ['lifecycle', 'update', 'lock'];
  if (dir === undefined)
    return [
      doc.diagnostic(
        CODES.INVALID_VALUE,
        at,
        `"${lock}" has no directory: a container sees the lock's directory mounted at the same path from its root`,
        'e.g. lock = "tmp/balena/updates.lock" (the container locks /tmp/balena/updates.lock)',
      ),
    ];
  const top = dir.split('/')[1]!;
  if (SYSTEM_DIRS.has(top) || dir === '/tmp' || dir === '/run')
    return [
      doc.diagnostic(
        CODES.INVALID_VALUE,
        at,
        `"${lock}" would mount over ${dir} in the container`,
        'use a directory of its own, e.g. lock = "tmp/balena/updates.lock" or "run/lock/updates.lock"',
      ),
    ];
  return [];
}
