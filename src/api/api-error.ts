// Every API failure as one JSON shape, `{"error":{"code":"KS_…","message":"…"}}`, with codes clients may branch on.
import { CodedError } from '../core/errors.js';

/** Stable: keystonectl and scripts branch on these, never on messages. */
export type ApiErrorCode =
  | 'KS_BAD_REQUEST'
  | 'KS_BAD_PATH'
  | 'KS_BAD_NAME'
  | 'KS_BAD_QUERY'
  | 'KS_BAD_BODY'
  | 'KS_BAD_JSON'
  | 'KS_BODY_TOO_LARGE'
  | 'KS_UNSUPPORTED_MEDIA_TYPE'
  | 'KS_TOKEN_MISSING'
  | 'KS_TOKEN_INVALID'
  | 'KS_SESSION_MISSING'
  | 'KS_SESSION_INVALID'
  | 'KS_SESSION_EXPIRED'
  | 'KS_CSRF_MISSING'
  | 'KS_CSRF_INVALID'
  | 'KS_FOREIGN_HOST'
  | 'KS_FOREIGN_ORIGIN'
  | 'KS_NOT_FOUND'
  | 'KS_COMPONENT_NOT_FOUND'
  | 'KS_NO_REVISION'
  | 'KS_RESTART_FAILED'
  | 'KS_START_FAILED'
  | 'KS_STOP_FAILED'
  | 'KS_WAIT_TIMEOUT'
  | 'KS_SYNC_UNAVAILABLE'
  | 'KS_SYNC_FAILED'
  | 'KS_FOLLOWING_GIT'
  | 'KS_WEBHOOK_DISABLED'
  | 'KS_WEBHOOK_SIGNATURE'
  | 'KS_SHUTTING_DOWN'
  | 'KS_NOT_IMPLEMENTED'
  | 'KS_TOO_MANY_STREAMS'
  | 'KS_DASHBOARD_UNBUILT'
  | 'KS_LOG_UNREADABLE'
  | 'KS_INTERNAL';

export interface ErrorBody {
  error: { code: string; message: string };
  /** Some errors carry what the client needs next (the 504 of a restart: the state of each component). */
  [extra: string]: unknown;
}

/** Thrown by handlers and hooks; the server's error handler turns it into its status and body. */
export class ApiError extends CodedError<ApiErrorCode, object> {
  constructor(
    readonly statusCode: number,
    code: ApiErrorCode,
    message: string,
    /** Top-level fields beside `error` in the body. */
    readonly extra: Record<string, unknown> = {},
  ) {
    super(code, message);
    this.name = 'ApiError';
  }

  body(): ErrorBody {
    return { error: { code: this.code, message: this.message }, ...this.extra };
  }
}

/** The fastify errors a client can cause, mapped to ours; anything else is ours to fix (500). */
export function fromFastifyError(err: Error & { code?: string; statusCode?: number; validation?: unknown }): ApiError {
  if (err instanceof ApiError) return err;
  switch (err.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ApiError(415, 'KS_UNSUPPORTED_MEDIA_TYPE', 'request bodies must be application/json');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ApiError(413, 'KS_BODY_TOO_LARGE', 'the request body is larger than the API accepts');
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new ApiError(400, 'KS_BAD_JSON', err.message);
  }
  if (err.validation) return new ApiError(400, 'KS_BAD_BODY', err.message);
  // Fastify's own 4xx (a malformed request line or header): the client's fault, with fastify's words.
  if (err.statusCode !== undefined && err.statusCode >= 400 && err.statusCode < 500) return new ApiError(err.statusCode, 'KS_BAD_REQUEST', err.message);
  return new ApiError(500, 'KS_INTERNAL', 'internal error (see the agent log)');
}
