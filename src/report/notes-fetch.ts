// The one fetch the Git notes reporter makes: the server's tip of this device's notes ref, when a push found it moved
// (git-notes-reporter.ts). That ref is anyone's to push who can push to the repository, so what comes back is bounded
// like every other fetch of the agent, and more: bytes on the wire (the ref advertisement and the pack), objects, and
// the bytes they inflate to (upload-pack-limits.ts), each refused with KS_STATUS_NOTES_TOO_LARGE before the library
// holds it (a 400 MB note took an agent to 2.7 GiB; issue 28). The fetch is shallow: the tip and its tree are all a
// notes commit is built on, and a device's whole notes history would grow with every report it ever made.
import * as fs from 'node:fs';
import git, { Errors, type GitHttpRequest, type GitHttpResponse, type HttpClient } from 'isomorphic-git';
import nodeHttp from 'isomorphic-git/http/node';
import { StatusDeliveryError } from './commit-status.js';
import { headCompletingHttp } from '../git/git-head-advertisement.js';
import { gitHttpAgent } from '../git/git-http-agent.js';
import { uploadPackCost, type PackLimits } from './upload-pack-limits.js';

export interface NotesFetchLimits extends PackLimits {
  /** Bytes the fetch may receive on the wire, its ref advertisement included. */
  maxBytes: number;
}

/**
 * A device's own notes tip is its tree of one note per commit it reported on: ~250 bytes inflated a note, so 64 MiB
 * is a quarter of a million commits. The advertisement lists every ref of the repository (~81 B each): 32 MiB is
 * some 400,000 refs. Past these, the device starts its notes afresh (git-notes-reporter.ts) rather than read on.
 */
export const DEFAULT_NOTES_FETCH_LIMITS: NotesFetchLimits = {
  maxBytes: 32 << 20,
  maxInflatedBytes: 64 << 20,
  maxObjects: 500_000,
};

export interface NotesFetchOptions {
  gitdir: string;
  url: string;
  /** The notes ref; fetched into the remote-tracking ref the cache's `remote.origin.fetch` names. */
  ref: string;
  headers: Record<string, string>;
  signal: AbortSignal;
  limits: NotesFetchLimits;
  /** For messages: what is fetched from where (no credentials). */
  what: string;
}

/**
 * The server's tip of `ref`, fetched into the cache with its tree (depth 1); undefined when the server has no such ref.
 * Throws StatusDeliveryError KS_STATUS_NOTES_TOO_LARGE past a limit; other errors as the library throws them.
 */
export async function fetchNotesTip(o: NotesFetchOptions): Promise<string | undefined> {
  const guard = new FetchGuard(o.limits, o.what);
  const http = headCompletingHttp(guard.client(o.signal), o.ref);
  const fetch = (depth: number | undefined) =>
    git.fetch({
      fs,
      http,
      gitdir: o.gitdir,
      url: o.url,
      remote: 'origin',
      ref: o.ref,
      remoteRef: o.ref,
      singleBranch: true,
      tags: false,
      headers: o.headers,
      ...(depth && { depth }),
    });
  try {
    try {
      return (await fetch(1)).fetchHead ?? undefined;
    } catch (e) {
      // A server without shallow fetches (none of the big hosts): the whole history then, under the same limits.
      if (!(e instanceof Errors.RemoteCapabilityError) || guard.failure) throw e;
      return (await fetch(undefined)).fetchHead ?? undefined;
    }
  } catch (e) {
    if (guard.failure) throw guard.failure; // whatever the library made of the aborted stream
    if (e instanceof Errors.NotFoundError) return undefined; // gone meanwhile (a server restored from a backup)
    throw e;
  }
}

/** Counts and caps one fetch's answers, and holds the reason it was abandoned. */
class FetchGuard {
  received = 0;
  failure?: StatusDeliveryError;
  private readonly controller = new AbortController();

  constructor(
    private readonly limits: NotesFetchLimits,
    private readonly what: string,
  ) {}

  client(signal: AbortSignal): HttpClient {
    const both = AbortSignal.any([signal, this.controller.signal]);
    return {
      request: async (req: GitHttpRequest): Promise<GitHttpResponse> => {
        if (this.failure) throw this.failure;
        const res = await nodeHttp.request({ ...req, signal: both, agent: gitHttpAgent(req.url) });
        if (!res.body) return res;
        const body = this.counted(res.body);
        if ((req.method ?? 'GET') !== 'POST' || res.statusCode !== 200 || !/\/git-upload-pack$/.test(req.url))
          return { ...res, body };
        // The pack is walked whole before the library sees a byte of it: its wire bytes are capped above.
        const whole = Buffer.concat(await collect(body));
        try {
          uploadPackCost(whole, this.limits, this.what);
        } catch (e) {
          this.fail(e as StatusDeliveryError);
          throw e;
        }
        return { ...res, body: once(whole) };
      },
    };
  }

  private async *counted(source: AsyncIterableIterator<Uint8Array>): AsyncIterableIterator<Uint8Array> {
    for await (const chunk of source) {
      this.received += chunk.byteLength;
      if (this.received > this.limits.maxBytes)
        this.fail(
          new StatusDeliveryError(
            'KS_STATUS_NOTES_TOO_LARGE',
            `${this.what}: the server sent more than ${this.limits.maxBytes} bytes; the fetch was abandoned`,
          ),
        );
      // Stop reading at once: the library gathers answers whole in memory, so the cap is a memory bound too.
      if (this.failure) throw this.failure;
      yield chunk;
    }
  }

  private fail(e: StatusDeliveryError): void {
    if (this.failure) return;
    this.failure = e;
    this.controller.abort(e);
  }
}

async function collect(source: AsyncIterableIterator<Uint8Array>): Promise<Uint8Array[]> {
  const out: Uint8Array[] = [];
  for await (const chunk of source) out.push(chunk);
  return out;
}

async function* once(body: Uint8Array): AsyncIterableIterator<Uint8Array> {
  yield body;
}
