// Issue 28, finding 1: a signature binds the ref it is meant for (SPEC §6). Reproduced as the review did: a change
// signed on a pull-request branch (`keystonectl sign --ref pr`) is pushed to main by whoever can push (a device's
// credential could); the device following main refuses it with KS_SIGNATURE_WRONG_REF, reports `error` on the
// commit and keeps running what it ran. The same change signed for main is applied. With --require-ref, a set signed
// for no ref is refused too (KS_SIGNATURE_NO_REF). A real agent, a real Git smart-HTTP server.
import { describe, expect, it } from 'vitest';
import type { ComponentSpec } from '../support/stack-fixture.js';
import { withGitWorld, type GitWorld } from '../support/git-world.js';

const svc = (version: string): ComponentSpec => ({ name: 'svc', version, command: 'sleep', args: ['1000'] });

function runsVersion(w: GitWorld): string | undefined {
  return w.h.components().find((c) => c.name === 'svc')?.version;
}

describe('a signature binds the ref it was made for', { timeout: 180_000 }, () => {
  it('a set signed for pr and pushed to main is refused and reported; signed for main, it is applied', async () => {
    await withGitWorld([svc('1.0.0')], async (w) => {
      const first = await w.push('svc 1.0.0, signed for main', { signArgs: ['--ref', 'main'] });
      w.start();
      await w.noteSays(first, 'success');

      w.fx.components = [svc('2.0.0')];
      const promoted = await w.push('svc 2.0.0, signed on the pull-request branch and pushed to main', {
        signArgs: ['--ref', 'pr'],
      });
      const refused = await w.noteSays(promoted, 'error');
      expect(refused.description).toContain('KS_SIGNATURE_WRONG_REF');
      expect(refused.description).toContain('refs/heads/pr');
      expect(runsVersion(w)).toBe('1.0.0');
      expect(w.h.history().find((e) => e.revision === promoted)?.outcome).toBe('rejected');

      const merged = await w.push('svc 2.0.0, signed for main on merge', { signArgs: ['--ref', 'main'] });
      await w.noteSays(merged, 'success');
      expect(runsVersion(w)).toBe('2.0.0');
    });
  });

  it('with --require-ref, a set signed for no ref is refused (KS_SIGNATURE_NO_REF); one signed for main is applied', async () => {
    await withGitWorld([svc('1.0.0')], async (w) => {
      const unbound = await w.push('svc 1.0.0, signed for no ref');
      w.start(['--require-ref']);
      const refused = await w.noteSays(unbound, 'error');
      expect(refused.description).toContain('KS_SIGNATURE_NO_REF');
      expect(runsVersion(w)).toBeUndefined();

      const bound = await w.push('svc 1.0.0, signed for main', { signArgs: ['--ref', 'main'] });
      await w.noteSays(bound, 'success');
      expect(runsVersion(w)).toBe('1.0.0');
    });
  });
});
