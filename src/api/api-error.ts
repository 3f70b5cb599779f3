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

/** An ApiError as it is; anything else is ours to fix (500), its details for the log, never for the client. */
export function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  return new ApiError(500, 'KS_INTERNAL', 'internal error (see the agent log)');
}
