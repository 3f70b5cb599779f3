// A fixture for test/support/skip-summary.test.ts (not part of the suite: the main config includes only *.test.ts):
// two tests that need minisign, one that needs promtool, one that needs nothing.
import { describe, expect, it } from 'vitest';
import { needs } from '../requirements.js';

const minisign = needs('minisign');
const promtool = needs('promtool');

describe.skipIf(minisign.skip)(minisign.title('minisign interop'), () => {
  it('signs', () => expect(minisign.reason).toBeUndefined());
  it('verifies', () => expect(minisign.reason).toBeUndefined());
});

it.skipIf(promtool.skip)(promtool.title('promtool accepts the metrics'), () => expect(promtool.reason).toBeUndefined());

it('needs nothing', () => expect(1 + 1).toBe(2));
