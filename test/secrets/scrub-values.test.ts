// What a failure report publishes (issue 28, finding 10): every value the component was given, replaced by its name.
import { describe, expect, it } from 'vitest';
import { cutLine, cutMarker, MAX_LINE_BYTES } from '../../src/core/line-bound.js';
import { MIN_SCRUB_LENGTH, scrubValues } from '../../src/secrets/scrub-values.js';

const token = { label: '[config:token]', value: 's3cr3t-token-value' };

describe('scrubValues', () => {
  it('replaces every occurrence of a value by its name', () => {
    expect(scrubValues('using s3cr3t-token-value, then s3cr3t-token-value again', [token])).toBe(
      'using [config:token], then [config:token] again',
    );
    expect(scrubValues('nothing to see', [token])).toBe('nothing to see');
  });

  it(`leaves values shorter than ${MIN_SCRUB_LENGTH} characters alone, so text is not mangled`, () => {
    const given = [
      { label: '[config:replicas]', value: '1' },
      { label: '[config:debug]', value: 'on' },
      { label: '[config:tls]', value: 'true' },
    ];
    expect(scrubValues('exited with 1 on line 10: tls=true', given)).toBe('exited with 1 on line 10: tls=[config:tls]');
  });

  it('takes the longest value first, and never scrubs a label again', () => {
    const given = [
      { label: '[config:host]', value: 'db.internal' },
      { label: '[config:url]', value: 'postgres://db.internal:5432' },
      { label: '[config:word]', value: 'config' },
    ];
    expect(scrubValues('cannot reach postgres://db.internal:5432 (db.internal)', given)).toBe(
      'cannot reach [config:url] ([config:host])',
    );
  });

  it('scrubs each line of a value of several lines (output lines are joined with " | ")', () => {
    const key = {
      label: '[config:key]',
      value: '-----BEGIN KEY-----\nMIIBVgIBADANBgkqhkiG9w0BAQEFAASC\n-----END KEY-----',
    };
    expect(
      scrubValues('bad key: -----BEGIN KEY----- | MIIBVgIBADANBgkqhkiG9w0BAQEFAASC | -----END KEY-----', [key]),
    ).toBe('bad key: [config:key] | [config:key] | [config:key]');
  });

  it('scrubs the pieces of a value that a cut left either side of its marker', () => {
    // cutLine's middle cut: the start of a value before the marker (and its space), the end of one after it.
    expect(scrubValues(`using s3cr3t-tok ${cutMarker(500)}oken-value and more`, [token])).toBe(
      `using [config:token] ${cutMarker(500)}[config:token] and more`,
    );
    // A tail's cut (keepEnd): the marker first, the end of a value right after it.
    expect(scrubValues(`${cutMarker(5, true)}en-value exited`, [token])).toBe(
      `${cutMarker(5, true)}[config:token] exited`,
    );
    // Pieces shorter than a value worth scrubbing say nothing.
    expect(scrubValues(`${cutMarker(5)}lue`, [token])).toBe(`${cutMarker(5)}lue`);
    // As the agent cuts a reason: nothing of the value is left.
    const reason = cutLine(
      `install script of api exited with 1: ${'x'.repeat(3 * MAX_LINE_BYTES)}${token.value}${'y'.repeat(40)}`,
      80,
    );
    expect(reason).toMatch(/\] ken-value/);
    expect(scrubValues(reason, [token])).toMatch(/\[cut: \d+ bytes\] \[config:token\]y{40}$/);
  });

  it('scrubs nothing when nothing was given', () => {
    expect(scrubValues('as it was', [])).toBe('as it was');
  });
});

describe('encoded forms of a value (issue 29 review)', () => {
  const token = 'ab"cd/ef-secret-1234';
  const given = [{ label: '[config:token]', value: token }];
  it('JSON-escaped, URL-encoded and base64 at any alignment are scrubbed too', () => {
    for (const printed of [
      JSON.stringify({ token }),
      `token=${encodeURIComponent(token)}`,
      `auth: ${Buffer.from(token).toString('base64')}`,
      `basic ${Buffer.from(`user:${token}`).toString('base64')}`,
      `basic ${Buffer.from(`us:${token}`).toString('base64url')}`,
    ]) {
      const out = scrubValues(printed, given);
      expect(out, printed).toContain('[config:token]');
      expect(out).not.toContain('secret-1234');
      // No run of the value's base64 (any alignment) is left.
      for (let a = 0; a < 3; a++)
        expect(out).not.toContain(
          Buffer.from(token)
            .subarray(a, a + 12)
            .toString('base64'),
        );
    }
  });
});
