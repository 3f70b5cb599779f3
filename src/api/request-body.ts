// Request bodies, read only for the methods that carry one and only in the types a route takes: JSON everywhere
// (parsed, refusing `__proto__` and `constructor.prototype` keys as fastify's secure parser did), and the raw bytes
// for the GitHub webhook, whose signature covers them. Sizes are capped before and while reading.
import type { IncomingMessage } from 'node:http';
import { ApiError } from './api-error.js';

export interface BodyOptions {
  /** Bytes at most. */
  limit: number;
  /** Media types handed to the route as a Buffer, unparsed; the default takes application/json and parses it. */
  raw?: readonly string[];
}

const WITH_BODY = new Set(['POST', 'PUT', 'PATCH']);
/** These carry a body only when they say so with a content type and a length (or chunked encoding). */
const MAYBE_BODY = new Set(['DELETE', 'OPTIONS']);

const unsupported = () => new ApiError(415, 'KS_UNSUPPORTED_MEDIA_TYPE', 'request bodies must be application/json');
const tooLarge = () => new ApiError(413, 'KS_BODY_TOO_LARGE', 'the request body is larger than the API accepts');

/** The body as the route takes it, or undefined when the request has none. */
export async function readBody(req: IncomingMessage, opts: BodyOptions): Promise<unknown> {
  const { headers } = req;
  const contentType = headers['content-type'];
  const method = req.method ?? 'GET';
  const announced =
    headers['transfer-encoding'] !== undefined ||
    (headers['content-length'] !== undefined && headers['content-length'] !== '0');
  if (WITH_BODY.has(method)) {
    if (contentType === undefined) {
      if (!announced) return undefined;
      throw unsupported();
    }
  } else if (!(
    MAYBE_BODY.has(method) &&
    contentType !== undefined &&
    (headers['transfer-encoding'] !== undefined || headers['content-length'] !== undefined)
  )) {
    return undefined;
  }
  const mediaType = contentType!.split(';', 1)[0]!.trim().toLowerCase();
  const raw = opts.raw?.includes(mediaType) ?? false;
  if (!raw && (opts.raw !== undefined || mediaType !== 'application/json')) throw unsupported();
  const bytes = await readAll(req, opts.limit);
  if (raw) return bytes;
  if (bytes.length === 0)
    throw new ApiError(400, 'KS_BAD_JSON', "Body cannot be empty when content-type is set to 'application/json'");
  return parseJson(bytes.toString('utf8'));
}

function parseJson(text: string): unknown {
  const invalid = () =>
    new ApiError(400, 'KS_BAD_JSON', "Body is not valid JSON but content-type is set to 'application/json'");
  try {
    // A `__proto__` key would become the prototype of the object if a handler ever copied it with Object.assign or a
    // spread into another; a `constructor.prototype` one reaches every object's prototype through a careless merge.
    return JSON.parse(text, (key, value: unknown) => {
      if (key === '__proto__') throw invalid();
      if (key === 'constructor' && value !== null && typeof value === 'object' && Object.hasOwn(value, 'prototype'))
        throw invalid();
      return value;
    });
  } catch {
    throw invalid();
  }
}

/** The whole body, refused (413) as soon as it is announced or found to be larger than `limit`. */
function readAll(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = req.headers['content-length'] === undefined ? undefined : Number(req.headers['content-length']);
  if (declared !== undefined && declared > limit) return Promise.reject(tooLarge());
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        cleanup();
        reject(tooLarge());
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      if (declared !== undefined && size !== declared)
        reject(new ApiError(400, 'KS_BAD_JSON', 'Request body size did not match Content-Length'));
      else resolve(Buffer.concat(chunks));
    };
    // A client that sends part of a body and goes away is a bad request, not the agent's failure: a 400 (logged
    // nowhere), where an error would put a stack trace in the log for every such request, token or not.
    const onError = () => {
      cleanup();
      reject(new ApiError(400, 'KS_BAD_REQUEST', 'the request body ended before it was complete'));
    };
    const onClose = () => {
      if (!req.complete) onError();
    };
    const cleanup = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
  });
}
