// The test image: a rootfs of the host's static busybox, `docker import`ed (or `podman import`ed: test-engine.ts) once
// per machine and engine (no registry is reachable).
import { spawnSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ensureRootfsImage } from './rootfs-image.js';
import { engineCli, testEngine, type TestEngine } from './test-engine.js';

export const BUSYBOX_IMAGE = 'keystone-test/busybox:1';
export const BUSYBOX_APPLETS = [
  'sh',
  'httpd',
  'sleep',
  'nc',
  'id',
  'cat',
  'echo',
  'wget',
  'true',
  'false',
  'ls',
  'grep',
  'touch',
  'test',
] as const;

/** Builds `keystone-test/busybox:1` unless the engine has it already (see ensureRootfsImage). */
export function ensureBusyboxImage(timeoutMs = 60_000, engine: TestEngine = testEngine()): Promise<string> {
  return ensureRootfsImage(
    {
      tag: BUSYBOX_IMAGE,
      applets: BUSYBOX_APPLETS,
      dirs: ['www'],
      fill: (root) => writeFile(join(root, 'www', 'index.html'), 'keystone test page\n'),
    },
    timeoutMs,
    engine,
  );
}

/** Ids of every container (running or not) carrying the label `key=value`. */
export function containersLabelled(key: string, value: string, engine: TestEngine = testEngine()): string[] {
  const { cmd, args } = engineCli(engine);
  const r = spawnSync(cmd, [...args, 'ps', '-aq', '--no-trunc', '--filter', `label=${key}=${value}`], {
    encoding: 'utf8',
    timeout: 30_000,
  });
  if (r.status !== 0)
    throw new Error(`${cmd} ps --filter label=${key}=${value} failed: ${r.stderr || r.error?.message}`);
  return r.stdout.split('\n').filter(Boolean);
}

/** Force-removes every container carrying the label `key=value` (a test's clean-up, e.g. by `io.keystone.owner`). */
export function removeContainersLabelled(key: string, value: string, engine: TestEngine = testEngine()): void {
  const ids = containersLabelled(key, value, engine);
  if (ids.length === 0) return;
  const { cmd, args } = engineCli(engine);
  const r = spawnSync(cmd, [...args, 'rm', '-f', '-v', ...ids], { encoding: 'utf8', timeout: 60_000 });
  if (r.status !== 0 && containersLabelled(key, value, engine).length > 0)
    throw new Error(`${cmd} rm -f of ${ids.join(' ')} failed: ${r.stderr || r.error?.message}`);
}
