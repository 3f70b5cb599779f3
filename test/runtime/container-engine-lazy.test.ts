// dockerode is loaded only when an engine may answer (issue 16): with its SSH transport it costs a device ~25 MB. A
// device without any engine socket looks for one, says which sockets it tried, and never loads the client. Run in a
// fresh node process, whose CommonJS module cache tells what was loaded.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../support/example-repo.js';

/** connectEngine in a child over the given sockets: what it said, and whether dockerode was loaded. */
function probe(sockets: { docker: string[]; podman: string[] }): { error: string; dockerodeLoaded: boolean } {
  const module = pathToFileURL(join(PROJECT_ROOT, 'dist', 'runtime', 'container-engine.js')).href;
  const script = `
    import { createRequire } from 'node:module';
    const { connectEngine } = await import(${JSON.stringify(module)});
    let error = '';
    try { await connectEngine('auto', { env: {}, socketPaths: ${JSON.stringify(sockets)} }); } catch (e) { error = e.message; }
    const loaded = Object.keys(createRequire(${JSON.stringify(module)}).cache).some((f) => f.includes('/node_modules/dockerode/'));
    console.log(JSON.stringify({ error, dockerodeLoaded: loaded }));`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 20_000 });
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as { error: string; dockerodeLoaded: boolean };
}

describe('the container engine client loads only when a socket is there', () => {
  it('no socket at all: KS_CONTAINER_ENGINE_UNAVAILABLE naming each, and dockerode never loaded', () => {
    const dir = mkdtempSync(join(tmpdir(), 'keystone-no-engine-'));
    try {
      const r = probe({ docker: [join(dir, 'docker.sock')], podman: [join(dir, 'podman.sock')] });
      expect(r.error).toContain(`${join(dir, 'docker.sock')} (no such socket)`);
      expect(r.error).toContain(`${join(dir, 'podman.sock')} (no such socket)`);
      expect(r.dockerodeLoaded).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a path that exists but is no engine: the client is loaded to ask it, and the failure says why', () => {
    const dir = mkdtempSync(join(tmpdir(), 'keystone-no-engine-'));
    try {
      const r = probe({ docker: [dir], podman: [] });
      expect(r.error).toContain(dir);
      expect(r.error).not.toContain(`${dir} (no such socket)`);
      expect(r.dockerodeLoaded).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
