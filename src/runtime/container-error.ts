// Container runtime failures with stable codes: the agent branches on `code`, never on message text.
import { CodedError } from '../core/errors.js';
import type { PolicyCode } from '../core/policy-check.js';

/**
 * Every code the container runtime throws (or reports from checkContainerComponent). Stable: reports, the CLI and
 * tests depend on them. KS_START_FAILED, KS_STOP_FAILED, KS_WRONG_RUNTIME and KS_INSTALL_ABORTED mean what they
 * mean for processes.
 */
export type ContainerCode =
  | 'KS_CONTAINER_ENGINE_UNAVAILABLE'
  | 'KS_CONTAINER_NOT_PERMITTED'
  | 'KS_CONTAINER_NOT_OWNED'
  | 'KS_IMAGE_MISSING'
  | 'KS_IMAGE_PULL_FAILED'
  | 'KS_MOUNT_SOURCE_MISSING'
  | 'KS_MOUNT_SOURCE_INVALID'
  | 'KS_START_FAILED'
  | 'KS_STOP_FAILED'
  | 'KS_WRONG_RUNTIME'
  | 'KS_INSTALL_ABORTED'
  // A device policy refusal, raised again by the runtime before it creates anything (see checkDevicePolicy).
  | PolicyCode;

/** What a ContainerError knows beyond its message; fields are set only where they mean something. */
export interface ContainerErrorData {
  component?: string;
  image?: string;
  containerId?: string;
  /** The TOML path of the offending field (`lifecycle.run.container.mounts[0].source`). */
  path?: string;
  /** Engine discovery: every endpoint tried, with why it did not answer. */
  tried?: string[];
}

export class ContainerError extends CodedError<ContainerCode, ContainerErrorData> {
  override readonly name = 'ContainerError';
}

/** Narrowing helper for catch blocks and tests: `isContainerError(e, 'KS_IMAGE_MISSING')`. */
export function isContainerError(e: unknown, code?: ContainerCode): e is ContainerError {
  return e instanceof ContainerError && (code === undefined || e.code === code);
}

/** The HTTP status of a dockerode failure (404 no such container/image, 304 not modified, 409 conflict). */
export function engineStatus(e: unknown): number | undefined {
  const s = (e as { statusCode?: unknown } | null)?.statusCode;
  return typeof s === 'number' ? s : undefined;
}

/** The engine's own words for a failure (its JSON `message`), else the error's message. */
export function engineMessage(e: unknown): string {
  const json = (e as { json?: { message?: unknown } } | null)?.json;
  if (json && typeof json.message === 'string') return json.message;
  return e instanceof Error ? e.message : String(e);
}
