// exitCodeOf (core/errors.ts) replaced the two error boundaries' ladders (keystone's and keystonectl's): for every
// coded error class and every code it carries, it gives what the ladder gave, in each program where the class can
// reach the boundary.
import { describe, expect, it } from 'vitest';
import { AgentUpdateError, type AgentUpdateCode } from '../../src/agent-update/agent-update-error.js';
import { ApiError, type ApiErrorCode } from '../../src/api/api-error.js';
import { ApiTokenError } from '../../src/api/api-token.js';
import { ArtifactError, type ArtifactCode } from '../../src/artifacts/artifact-error.js';
import { AgentApiError, AgentUnreachableError } from '../../src/cli/agent-client.js';
import { AgentConfigError } from '../../src/cli/agent-config-error.js';
import { UsageError } from '../../src/cli/io.js';
import { CATALOGUE, type ErrorCode } from '../../src/core/error-catalogue.js';
import { CodedError, exitCodeOf, InvalidRevisionError, OperationError } from '../../src/core/errors.js';
import { UnknownRefError } from '../../src/fleet-view/fleet-reports-read.js';
import { GitServerBusyError } from '../../src/git/git-ls-refs.js';
import { IdentityError, type IdentityCode } from '../../src/identity/identity-error.js';
import { RevocationsError } from '../../src/identity/revocations.js';
import { StatusDeliveryError, type StatusDeliveryCode } from '../../src/report/commit-status.js';
import { ContainerError, type ContainerCode } from '../../src/runtime/container-error.js';
import { RuntimeError, type RuntimeCode } from '../../src/runtime/runtime-error.js';
import { TrustedFileError, type TrustedFileCode } from '../../src/runtime/trusted-file.js';
import { UpdateLockError } from '../../src/runtime/update-lock.js';
import { SecretError, type SecretCode } from '../../src/secrets/secret-error.js';
import { StateDirError, type StateDirCode } from '../../src/state-dir/safe-path.js';
import { StateStoreError, type StateStoreCode } from '../../src/store/state-store-error.js';
import { TrustError, type TrustCode } from '../../src/trust/trust-error.js';

type Err = Error & { code?: string };

/** keystone's boundary as it was (src/cli/keystone.ts before exitCodeOf). */
function keystoneLadder(err: Err): number {
  if (err instanceof UsageError || err.code?.startsWith('ERR_PARSE_ARGS')) return 2;
  if (err instanceof AgentConfigError) return 2;
  if (err instanceof StateDirError) return err.code === 'KS_STATE_DIR_UNSAFE' ? 2 : 1;
  if (
    err instanceof TrustError ||
    err instanceof TrustedFileError ||
    err instanceof IdentityError ||
    (err instanceof ArtifactError && err.code !== 'KS_ARTIFACT_FETCH_FAILED')
  )
    return 2;
  return 1;
}

/** keystonectl's boundary as it was (src/cli/keystonectl.ts before exitCodeOf). */
function keystonectlLadder(err: Err): number {
  if (err instanceof UsageError || err.code?.startsWith('ERR_PARSE_ARGS')) return 2;
  if (err instanceof TrustError || err instanceof IdentityError || err instanceof SecretError) return 2;
  if (err instanceof ArtifactError) return err.code === 'KS_ARTIFACT_FETCH_FAILED' ? 1 : 2;
  if (err instanceof InvalidRevisionError) return 2;
  return 1;
}

/** Every code of a union, checked by tsc to be all of them. */
const every =
  <T extends string>() =>
  <const A extends readonly T[]>(
    codes: A & ([Exclude<T, A[number]>] extends [never] ? unknown : { missing: Exclude<T, A[number]> }),
  ): readonly T[] =>
    codes;

const TRUST = every<TrustCode>()([
  'KS_UNSIGNED',
  'KS_SIGNATURE_MALFORMED',
  'KS_SIGNATURE_TOO_LARGE',
  'KS_SIGNATURE_INVALID',
  'KS_SIGNATURE_NONCANONICAL',
  'KS_TRUSTED_COMMENT_INVALID',
  'KS_SIGNATURE_NO_TIMESTAMP',
  'KS_SIGNATURE_WRONG_REF',
  'KS_SIGNATURE_NO_REF',
  'KS_UNTRUSTED_KEY',
  'KS_THRESHOLD_NOT_MET',
  'KS_WEAK_KEY',
  'KS_KEY_MALFORMED',
  'KS_KEY_PASSWORD',
  'KS_SUMS_MALFORMED',
  'KS_SUMS_TOO_LARGE',
  'KS_FILE_NOT_SIGNED',
  'KS_DIGEST_MISMATCH',
  'KS_SIGNED_FILE_MISSING',
  'KS_SIGNATURE_REPLAYED',
  'KS_SIGNATURE_TOO_OLD',
  'KS_SIGNATURE_FROM_FUTURE',
]);
const IDENTITY = every<IdentityCode>()([
  'KS_IDENTITY_MISSING',
  'KS_IDENTITY_UNSAFE',
  'KS_IDENTITY_MALFORMED',
  'KS_CERT_MALFORMED',
  'KS_CERT_UNKNOWN_KEY',
  'KS_CERT_BAD_SIGNATURE',
  'KS_CERT_WRONG_DEVICE',
  'KS_CERT_EXPIRED',
  'KS_CERT_REVOKED',
  'KS_CERT_OTHER_KEY',
  'KS_REVOCATIONS_INVALID',
]);
// Not KS_SECRET_UNAVAILABLE: SecretCode lists it, yet only the runtimes throw it (RuntimeError, exit code 1).
const SECRET: readonly SecretCode[] = [
  'KS_SECRET_MISSING',
  'KS_SECRET_NOT_RECIPIENT',
  'KS_SECRET_CORRUPT',
  'KS_SECRET_NO_TARGET',
  'KS_SECRET_OPERATOR',
];
const ARTIFACT = every<ArtifactCode>()([
  'KS_ARTIFACT_UNSIGNED',
  'KS_ARTIFACT_DIGEST_MISMATCH',
  'KS_ARTIFACT_TOO_LARGE',
  'KS_ARTIFACT_FETCH_FAILED',
  'KS_ARTIFACT_NOT_FOUND',
  'KS_ARTIFACT_BAD_URI',
  'KS_ARTIFACT_INSTALL_UNSAFE',
  'KS_UNPACK_UNSAFE_ENTRY',
  'KS_UNPACK_TOO_LARGE',
  'KS_UNPACK_TOO_DEEP',
  'KS_UNPACK_FORMAT',
]);
const RUNTIME = every<RuntimeCode>()([
  'KS_INSTALL_FAILED',
  'KS_INSTALL_TIMEOUT',
  'KS_INSTALL_ABORTED',
  'KS_START_FAILED',
  'KS_STOP_FAILED',
  'KS_USER_UNKNOWN',
  'KS_ROOT_NOT_PERMITTED',
  'KS_WORK_DIR_UNREACHABLE',
  'KS_WORK_DIR_INVALID',
  'KS_WRONG_RUNTIME',
  'KS_SECRET_UNAVAILABLE',
  'KS_SECRET_NOT_TEXT',
  'KS_SECRET_PATH_TAKEN',
  'KS_SECRET_FILE_FAILED',
]);
const CONTAINER = every<ContainerCode>()([
  'KS_CONTAINER_ENGINE_UNAVAILABLE',
  'KS_CONTAINER_NOT_PERMITTED',
  'KS_CONTAINER_NOT_OWNED',
  'KS_IMAGE_MISSING',
  'KS_IMAGE_PULL_FAILED',
  'KS_MOUNT_SOURCE_MISSING',
  'KS_MOUNT_SOURCE_INVALID',
  'KS_START_FAILED',
  'KS_STOP_FAILED',
  'KS_WRONG_RUNTIME',
  'KS_INSTALL_ABORTED',
  'KS_MOUNT_NOT_PERMITTED',
  'KS_CAPABILITY_NOT_PERMITTED',
  'KS_DEVICE_NOT_PERMITTED',
  'KS_ROOT_NOT_PERMITTED',
]);
const STORE = every<StateStoreCode>()([
  'KS_STATE_CORRUPT',
  'KS_STATE_INVALID',
  'KS_STATE_NOT_FOUND',
  'KS_STATE_SCHEMA_TOO_NEW',
  'KS_STATE_OPEN_FAILED',
  'KS_STATE_BUSY',
  'KS_STATE_DISK_FULL',
]);
const STATUS = every<StatusDeliveryCode>()([
  'KS_STATUS_UNREACHABLE',
  'KS_STATUS_SERVER_ERROR',
  'KS_STATUS_RATE_LIMITED',
  'KS_STATUS_CONFLICT',
  'KS_STATUS_AUTH',
  'KS_STATUS_REJECTED',
  'KS_STATUS_INVALID',
  'KS_STATUS_GIT_FAILED',
  'KS_STATUS_NOTES_TOO_LARGE',
]);
const AGENT_UPDATE = every<AgentUpdateCode>()([
  'KS_AGENT_PACKAGE_DIGEST',
  'KS_AGENT_NO_PACKAGE',
  'KS_AGENT_PACKAGE_INVALID',
  'KS_AGENT_DOWNGRADE',
  'KS_AGENT_UNSIGNED',
  'KS_AGENT_PACKAGE_VERSION',
]);
const TRUSTED_FILE = every<TrustedFileCode>()(['KS_CONFIG_UNSAFE', 'KS_TRUSTED_KEY_UNSAFE', 'KS_SECRET_FILE_UNSAFE']);
const STATE_DIR = every<StateDirCode>()(['KS_STATE_DIR_UNSAFE', 'KS_STATE_DIR_LOCKED']);
const ALL = Object.keys(CATALOGUE) as ErrorCode[];

/** An instance of `C` with `code`, its constructor skipped: what the ladders and exitCodeOf look at is the class and the code. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const make = (C: abstract new (...args: any[]) => Error, code: string): Err =>
  Object.assign(Object.create(C.prototype) as Err, { code, message: 'm' });

// The classes each program's commands can throw at its boundary, with the codes they carry. (SecretError and
// InvalidRevisionError are keystonectl's: the agent refuses a secret or a revision inside its reconcile, never at
// start; StateDirError, TrustedFileError and AgentConfigError are the agent's start-up's.)
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Case = [abstract new (...args: any[]) => Error, readonly string[]];
const BOTH: Case[] = [
  [UsageError, ALL],
  [OperationError, ALL],
  [AgentUnreachableError, ['KS_AGENT_UNREACHABLE']],
  [GitServerBusyError, ['KS_GIT_SERVER_BUSY']],
  [TrustError, TRUST],
  [IdentityError, IDENTITY],
  [RevocationsError, ['KS_REVOCATIONS_INVALID']],
  [ArtifactError, ARTIFACT],
  [RuntimeError, RUNTIME],
  [ContainerError, CONTAINER],
  [StateStoreError, STORE],
  [StatusDeliveryError, STATUS],
  [AgentUpdateError, AGENT_UPDATE],
  [UnknownRefError, ['KS_GIT_REF_NOT_FOUND']],
  [UpdateLockError, ['KS_UPDATE_LOCK']],
  [ApiTokenError, ['KS_API_TOKEN_INVALID']],
  [AgentApiError, ALL],
  [Error, [...ALL, 'ENOENT', 'EACCES']],
];
const KEYSTONE: Case[] = [
  ...BOTH,
  [AgentConfigError, ['KS_INVALID_CONFIG']],
  [StateDirError, STATE_DIR],
  [TrustedFileError, TRUSTED_FILE],
];
const KEYSTONECTL: Case[] = [...BOTH, [SecretError, SECRET], [InvalidRevisionError, ['KS_INVALID_REVISION']]];

describe('exitCodeOf', () => {
  for (const [program, cases, ladder] of [
    ['keystone', KEYSTONE, keystoneLadder],
    ['keystonectl', KEYSTONECTL, keystonectlLadder],
  ] as const) {
    it(`gives ${program} the exit code its ladder gave, for every class and code`, () => {
      const differ: string[] = [];
      for (const [C, codes] of cases) {
        for (const code of codes) {
          const err = make(C, code);
          if (exitCodeOf(err) !== ladder(err)) differ.push(`${C.name} ${code}: ${exitCodeOf(err)}, was ${ladder(err)}`);
        }
      }
      expect(differ).toEqual([]);
    });
  }

  it("takes node:util parseArgs's refusals as bad input, and anything else as a failure", () => {
    expect(exitCodeOf(Object.assign(new TypeError('Unknown option'), { code: 'ERR_PARSE_ARGS_UNKNOWN_OPTION' }))).toBe(
      2,
    );
    expect(exitCodeOf(new Error('boom'))).toBe(1);
    expect(exitCodeOf('a string')).toBe(1);
    expect(exitCodeOf(undefined)).toBe(1);
  });

  it('reads the exit code from the catalogue for a coded error', () => {
    expect(exitCodeOf(new CodedError('KS_SIGNATURE_INVALID', 'm'))).toBe(2);
    expect(exitCodeOf(new CodedError('KS_GIT_TIMEOUT', 'm'))).toBe(1);
    expect(exitCodeOf(new CodedError('KS_NOT_IN_THE_CATALOGUE', 'm'))).toBe(1);
  });

  it('keeps instanceof working through the common base', () => {
    const e = new TrustError('KS_UNSIGNED', 'no signature', 'SHA256SUMS.minisig');
    expect(e).toBeInstanceOf(TrustError);
    expect(e).toBeInstanceOf(CodedError);
    expect(e).toBeInstanceOf(Error);
    expect([e.code, e.message, e.file]).toEqual(['KS_UNSIGNED', 'no signature', 'SHA256SUMS.minisig']);
    const api = new ApiError(404, 'KS_NOT_FOUND' satisfies ApiErrorCode, 'no route');
    expect([api.name, api.statusCode, api.code, api.body()]).toEqual([
      'ApiError',
      404,
      'KS_NOT_FOUND',
      { error: { code: 'KS_NOT_FOUND', message: 'no route' } },
    ]);
  });
});
