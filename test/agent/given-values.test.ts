// What a commit status may say of a failure (issue 28, finding 10): each reason without the values its component was
// given — configuration and binds (the unit's inputs) and the environment its recipe sets — named instead.
import { describe, expect, it } from 'vitest';
import { givenValues, publishedFailures } from '../../src/agent/given-values.js';
import type { DesiredComponent } from '../../src/core/desired-state.js';
import { desired } from '../support/state-builder.js';

const state = desired([
  { name: 'api', env: { API_KEY: 'k-91f2c3d4e5', LEVEL: 'info' } },
  { name: 'web', image: 'busybox:latest', env: { UPSTREAM: 'http://api.internal:8080' } },
]);
const [api, web] = state.components.map((c): DesiredComponent =>
  c.name === 'api'
    ? { ...c, inputs: { 'config.token': 'tok-a1b2c3', 'deps.db.exports.url': 'postgres://db:5432' } }
    : c,
) as [DesiredComponent, DesiredComponent];

describe('givenValues', () => {
  it('names configuration and binds by their keys, then the environment', () => {
    expect(givenValues(api)).toEqual([
      { label: '[config:token]', value: 'tok-a1b2c3' },
      { label: '[deps:db.exports.url]', value: 'postgres://db:5432' },
      { label: '[env:API_KEY]', value: 'k-91f2c3d4e5' },
      { label: '[env:LEVEL]', value: 'info' },
    ]);
    expect(givenValues(web)).toEqual([{ label: '[env:UPSTREAM]', value: 'http://api.internal:8080' }]);
  });
});

describe('publishedFailures', () => {
  it("scrubs each reason of its own component's values; another component's are not its to scrub", () => {
    const failed = [
      {
        name: 'api',
        reason: 'install failed: token tok-a1b2c3 refused by postgres://db:5432 (key k-91f2c3d4e5, level info)',
      },
      { name: 'web', reason: 'cannot reach http://api.internal:8080 with tok-a1b2c3' },
    ];
    expect(publishedFailures(failed, [api, web])).toEqual([
      {
        name: 'api',
        reason:
          'install failed: token [config:token] refused by [deps:db.exports.url] (key [env:API_KEY], level [env:LEVEL])',
      },
      { name: 'web', reason: 'cannot reach [env:UPSTREAM] with tok-a1b2c3' },
    ]);
  });

  it("a composite's name stands for its members; a name the state does not have is scrubbed of every component's values", () => {
    const member = { ...web, name: 'app/web', group: 'app', member: 'web' };
    expect(publishedFailures([{ name: 'app', reason: 'http://api.internal:8080 down' }], [api, member])).toEqual([
      { name: 'app', reason: '[env:UPSTREAM] down' },
    ]);
    expect(
      publishedFailures([{ name: 'gone', reason: 'tok-a1b2c3 and http://api.internal:8080' }], [api, web]),
    ).toEqual([{ name: 'gone', reason: '[config:token] and [env:UPSTREAM]' }]);
  });
});
