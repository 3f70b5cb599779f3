// Step 2b of a revision (src/agent/revision-secrets.ts): a secret that cannot be opened refuses the revision with a
// reason naming it — also a secrets/ file the signature does not cover (set after signing: KS_FILE_NOT_SIGNED), which
// must be a refusal like any other, never an unexpected failure retried forever.
import { describe, expect, it } from 'vitest';
import { openRevisionSecrets } from '../../src/agent/revision-secrets.js';
import type { DesiredState } from '../../src/core/desired-state.js';
import { SecretOpener } from '../../src/secrets/open-secrets.js';
import { digestKeyOf } from '../../src/secrets/secret-digest.js';
import { SecretVault } from '../../src/secrets/secret-vault.js';
import { newAgeIdentity } from '../../src/secrets/age-codec.js';
import type { ReadResult, RepoReader } from '../../src/source/repo-reader.js';
import { TrustError } from '../../src/trust/trust-error.js';

const state = {
  planFile: 'plans/p.toml',
  components: [{ name: 'api', secrets: ['db_password'] }],
  layers: [['api']],
  startOrder: ['api'],
} as unknown as DesiredState;

describe('openRevisionSecrets', () => {
  it('a secrets/ file not in SHA256SUMS refuses the revision, naming the secret', async () => {
    const device = await newAgeIdentity();
    const reader: RepoReader = {
      label: 'test',
      readFile(path: string): Promise<ReadResult> {
        throw new TrustError(
          'KS_FILE_NOT_SIGNED',
          `${path} is not listed in SHA256SUMS: it was added after signing, or the set was not re-signed`,
          path,
        );
      },
    };
    const secrets = {
      opener: new SecretOpener({ ageIdentity: device.identity, digestKey: digestKeyOf(device.identity) }),
      vault: new SecretVault(),
    };
    const r = await openRevisionSecrets(reader, state, { target: 'eu', device: 'eu-1', labels: {}, secrets });
    expect(r).toEqual({
      ok: false,
      reason: expect.stringMatching(
        /^KS_FILE_NOT_SIGNED: secret db_password: secrets\/keys\/eu\.age is not listed in SHA256SUMS/,
      ),
    });
  });

  it('without a device identity a plan reading a secret is refused; one reading none passes untouched', async () => {
    const r = await openRevisionSecrets({ label: 't', readFile: () => Promise.reject(new Error('not read')) }, state, {
      target: 'eu',
      device: 'eu-1',
      labels: {},
      secrets: undefined,
    });
    expect(r).toEqual({ ok: false, reason: expect.stringMatching(/^KS_SECRET_UNAVAILABLE: .*db_password/) });
    const none = { ...state, components: [{ name: 'api' }] } as unknown as DesiredState;
    expect(
      await openRevisionSecrets({ label: 't', readFile: () => Promise.reject(new Error('not read')) }, none, {
        target: undefined,
        device: '',
        labels: {},
        secrets: undefined,
      }),
    ).toEqual({ ok: true, state: none });
  });
});
