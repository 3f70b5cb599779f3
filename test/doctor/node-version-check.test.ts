// Node's version against package.json's engines (one source of truth).
import { describe, expect, it } from 'vitest';
import { checkNodeVersion, requiredNodeRange } from '../../src/doctor/node-version-check.js';
import packageJson from '../../package.json' with { type: 'json' };

describe('node-version', () => {
  it('reads the range from package.json', () => {
    expect(requiredNodeRange()).toBe(packageJson.engines.node);
  });

  it('passes the running Node, fails one older than the range', () => {
    expect(checkNodeVersion(process.versions.node)).toMatchObject({ check: 'node-version', status: 'pass' });
    const r = checkNodeVersion('20.18.3', '>=20.19');
    expect(r).toMatchObject({ status: 'fail', detail: 'Node 20.18.3 is older than keystone needs (>=20.19)' });
    expect(r.fix).toContain('Node 20.19 or later');
    expect(checkNodeVersion('22.0.0', '>=20.19')).toMatchObject({ status: 'pass' });
  });
});
