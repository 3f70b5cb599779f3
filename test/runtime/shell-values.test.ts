// Finding 4 through the real install path and the real cmd: probe: a plan value built to break out of the shell
// word (quotes, $(…), backticks) reaches the install script and the health check as data. The revision is resolved
// as the agent resolves it (loadRevision), then ProcessRuntime installs and probes it for real.
import { existsSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { DesiredComponent } from '../../src/core/desired-state.js';
import { ProcessRuntime } from '../../src/runtime/process-runtime.js';
import { loadRevision } from '../../src/load/load-revision.js';
import { MemoryReader } from '../../src/source/memory-reader.js';
import { tempRoot } from './runtime-fixtures.js';

const PLAN = 'plans/p.toml';
const never = new AbortController().signal;
const runtime = new ProcessRuntime({ installArtifacts: async () => {} });
let tmp: Awaited<ReturnType<typeof tempRoot>>;
const MARKER = '/tmp/ks-shell-value-injected';

beforeEach(async () => {
  tmp = await tempRoot();
  await rm(MARKER, { force: true });
});
afterEach(async () => {
  await tmp.cleanup();
  await rm(MARKER, { force: true });
});

/** The one component of a revision whose plan sets `config.dir` to `dir`. */
async function component(dir: string, script: string, check: string): Promise<DesiredComponent> {
  const files = {
    [PLAN]: `[[components]]\nname = "app"\nrecipe = "recipes/app.toml"\n\n[components.config]\ndir = ${JSON.stringify(dir)}\n`,
    'recipes/app.toml': [
      '[metadata]\nname = "com.acme.app"\nversion = "1.0.0"\n',
      '[config]\ndir = "data"\n',
      `[lifecycle.install]\nscript = ${JSON.stringify(script)}\n`,
      '[lifecycle.run.exec]\ncommand = "sleep"\nargs = ["1000"]\n',
      `[lifecycle.run.health]\ncheck = ${JSON.stringify(check)}\n`,
    ].join('\n'),
  };
  const enc = new TextEncoder();
  const r = await loadRevision(
    new MemoryReader(new Map(Object.entries(files).map(([p, t]) => [p, enc.encode(t)])), 'test'),
    PLAN,
  );
  if (!r.ok) throw new Error(r.diagnostics.map((d) => d.message).join('\n'));
  return r.state.components[0]!;
}

const ATTACKS = [
  `x'; touch ${MARKER}; echo '`,
  `$(touch ${MARKER})`,
  `\`touch ${MARKER}\``,
  `"; touch ${MARKER}; echo "`,
  `a\nb; touch ${MARKER} #`,
];

describe('configuration values in the install script and a cmd: check run as data', () => {
  it.each(ATTACKS)('install: %j arrives verbatim and runs nothing', async (value) => {
    const c = await component(value, 'printf %s {{config.dir}} > out && mkdir -p {{config.dir}}', 'cmd:true');
    const paths = tmp.paths('app');
    await runtime.install(c, paths, never);
    expect(await readFile(join(paths.workDir, 'out'), 'utf8')).toBe(value);
    expect(existsSync(join(paths.workDir, value))).toBe(true);
    expect(existsSync(MARKER)).toBe(false);
  });

  it.each(ATTACKS)('cmd: check: %j is one argument and runs nothing', async (value) => {
    const c = await component(
      value,
      'true',
      'cmd:test $# -eq 0 && set -- {{config.dir}} && test $# -eq 1 && printf %s "$1" > probed',
    );
    const paths = tmp.paths('app');
    await runtime.install(c, paths, never);
    const probe = await runtime.healthProbe(c, paths);
    const r = await probe!(never);
    expect(r, r.detail).toMatchObject({ ok: true });
    expect(await readFile(join(paths.workDir, 'probed'), 'utf8')).toBe(value);
    expect(existsSync(MARKER)).toBe(false);
  });
});
