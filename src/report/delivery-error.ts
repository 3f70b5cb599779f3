// The coded error of a Git notes delivery (git-notes-reporter.ts), whatever the Git library or the network threw.
import { Errors } from 'isomorphic-git';
import { httpDeliveryError, StatusDeliveryError } from './commit-status.js';

/** Coded, and without the token (`token`) whatever the library put in its message. */
export function deliveryError(what: string, e: unknown, token: string | undefined): StatusDeliveryError {
  if (e instanceof StatusDeliveryError) {
    const message = e.message.startsWith(what) ? e.message : `${what}: ${e.message}`;
    return new StatusDeliveryError(e.code, redact(message, token), e.data, { cause: e.cause });
  }
  const detail = redact(e instanceof Error ? e.message : String(e), token);
  if (e instanceof Errors.HttpError)
    return httpDeliveryError(what, e.data.statusCode, redact(e.data.statusMessage, token));
  const code = (e as { code?: unknown }).code;
  if (
    typeof code === 'string' &&
    /^(ECONNREFUSED|ECONNRESET|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|ENOTFOUND|EAI_AGAIN|EPIPE|UND_ERR_\w+)$/.test(code)
  )
    return new StatusDeliveryError('KS_STATUS_UNREACHABLE', `${what}: ${code}`, {});
  if (e instanceof Errors.SmartHttpError || e instanceof Errors.UserCanceledError)
    return new StatusDeliveryError('KS_STATUS_UNREACHABLE', `${what}: ${detail}`, {});
  return new StatusDeliveryError('KS_STATUS_GIT_FAILED', `${what}: ${detail}`, {});
}

/** `text` with every occurrence of the token replaced by `***`. */
export function redact(text: string, token: string | undefined): string {
  return token ? text.split(token).join('***') : text;
}
