// The setpriv every component is started through: the real one, one that is not there, a file that is not setpriv.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkSetpriv } from '../../src/doctor/setpriv-check.js';

describe('setpriv', () => {
  it('runs the real setpriv and says its version', async () => {
    const r = await checkSetpriv('/usr/bin/setpriv');
    expect(r, r.detail).toMatchObject({ check: 'setpriv', status: 'pass' });
    expect(r.detail).toMatch(/^\/usr\/bin\/setpriv \(setpriv from util-linux \S+\)$/);
  });

  it('fails a setpriv that is not there, and a file that is not setpriv', async () => {
    const missing = join('/nonexistent', 'setpriv');
    expect(await checkSetpriv(missing)).toMatchObject({ status: 'fail', detail: `${missing} is missing` });
    const r = await checkSetpriv('/bin/false');
    expect(r).toMatchObject({ status: 'fail' });
    expect(r.detail).toMatch(/^\/bin\/false --version failed/);
    expect(r.fix).toContain('util-linux');
  });
});
