// fetchArtifact against real files and a real loopback HTTP server: the digest gates the cache, the cache
// saves the network, limits are enforced on bytes received, and relative paths stay in the repository.
import { describe, it, expect, beforeEach, afterEach } from 'vitest';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ArtifactError, type ArtifactCode } from '../../src/artifacts/artifact-error.js';
import { fetchArtifact, type FetchArtifactOptions } from '../../src/artifacts/fetch-artifact.js';
import { DirectoryReader } from '../../src/source/directory-reader.js';
import type { ReadResult, RepoReader } from '../../src/source/repo-reader.js';
import { tempRepo, type TempRepo } from '../support/repo-fixture.js';
import { needs } from '../support/requirements.js';
import { tempDir } from './fs-snapshot.js';
import { endless, serve, startServer, type TestServer } from './http-fixture.js';

const sha = (b: Buffer | string): string => createHash('sha256').update(b).digest('hex');
const BODY = Buffer.from('the artifact bytes\n'.repeat(100));
const RECIPE = 'recipes/com.acme.app.toml';

let repo: TempRepo;
let cache: { dir: string; cleanup(): void };
let server: TestServer;

beforeEach(async () => {
  repo = tempRepo({ [RECIPE]: '# recipe\n', 'recipes/files/app.bin': BODY, 'shared/tool.bin': BODY });
  cache = tempDir('ks-cache-');
  server = await startServer({
    '/app.bin': serve(BODY),
    '/redirect': (_req, res) => {
      res.writeHead(302, { location: '/app.bin' });
      res.end();
    },
    '/loop': (_req, res) => {
      res.writeHead(307, { location: '/loop' });
      res.end();
    },
    '/to-ftp': (_req, res) => {
      res.writeHead(301, { location: 'ftp://127.0.0.1/app.bin' });
      res.end();
    },
    '/endless': endless(),
    '/announced-huge': endless({ contentLength: 10 * 1024 * 1024 }),
    '/lying-length': endless({ contentLength: 1000 }),
    '/hang': () => {
      /* never answers */
    },
  });
});
afterEach(async () => {
  await server.close();
  repo.cleanup();
  cache.cleanup();
});

function opts(over: Partial<FetchArtifactOptions>): FetchArtifactOptions {
  return {
    uri: `${server.origin}/app.bin`,
    sha256: sha(BODY),
    recipeFile: RECIPE,
    reader: new DirectoryReader(repo.dir),
    cacheDir: cache.dir,
    maxBytes: 1024 * 1024,
    ...over,
  };
}

async function failure(p: Promise<unknown>, code: ArtifactCode): Promise<ArtifactError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ArtifactError);
  expect((err as ArtifactError).code).toBe(code);
  return err as ArtifactError;
}

/** Nothing under the digest's name, and no download left in the temp area. */
function expectNothingCached(hex: string): void {
  expect(existsSync(join(cache.dir, 'sha256', hex))).toBe(false);
  const tmp = join(cache.dir, 'tmp');
  expect(existsSync(tmp) ? readdirSync(tmp) : []).toEqual([]);
}

describe('fetchArtifact: sources', () => {
  it('reads a path relative to the recipe through the repository reader, into the content-addressed cache', async () => {
    const r = await fetchArtifact(opts({ uri: 'files/app.bin' }));
    expect(r).toEqual({ path: join(cache.dir, 'sha256', sha(BODY)), cached: false, bytes: BODY.length });
    expect(readFileSync(r.path)).toEqual(BODY);
    expect(await fetchArtifact(opts({ uri: '../shared/tool.bin' }))).toMatchObject({ cached: true });
  });

  it('reads relative paths through any RepoReader (e.g. a Git commit), mapping its errors', async () => {
    const files = new Map([['recipes/bin/tool', new Uint8Array(BODY)]]);
    const reader: RepoReader = {
      label: 'git main (abc1234)',
      async readFile(path: string, maxBytes: number): Promise<ReadResult> {
        const b = files.get(path);
        if (!b) return { ok: false, code: 'KS_FILE_NOT_FOUND', message: `${path} does not exist` };
        if (b.length > maxBytes) return { ok: false, code: 'KS_FILE_TOO_LARGE', message: 'too large' };
        return { ok: true, bytes: b };
      },
    };
    expect((await fetchArtifact(opts({ uri: 'bin/tool', reader }))).bytes).toBe(BODY.length);
    const missing = await failure(fetchArtifact(opts({ uri: 'bin/nope', reader, sha256: sha('x') })), 'KS_ARTIFACT_NOT_FOUND');
    expect(missing.message).toContain('git main (abc1234)');
    await failure(fetchArtifact(opts({ uri: 'bin/tool', reader, sha256: sha('other'), maxBytes: 10 })), 'KS_ARTIFACT_TOO_LARGE');
  });

  it('refuses a relative path escaping the repository, without reading it', async () => {
    for (const uri of ['../../etc/passwd', '/etc/passwd', 'files/../../../x', '..\\..\\x'])
      await failure(fetchArtifact(opts({ uri })), 'KS_ARTIFACT_BAD_URI');
    const reader: RepoReader = {
      label: 'spy',
      readFile: () => {
        throw new Error('must not be called');
      },
    };
    await failure(fetchArtifact(opts({ uri: '../../secret', reader })), 'KS_ARTIFACT_BAD_URI');
  });

  it('refuses schemes other than https, http and file', async () => {
    for (const uri of ['ftp://host/x', 's3://bucket/x', 'file://otherhost/x'])
      await failure(fetchArtifact(opts({ uri })), 'KS_ARTIFACT_BAD_URI');
  });

  it('reads a file:// URI', async () => {
    const src = tempDir('ks-file-');
    try {
      const p = join(src.dir, 'app.bin');
      writeFileSync(p, BODY);
      const r = await fetchArtifact(opts({ uri: pathToFileURL(p).href }));
      expect(r).toMatchObject({ cached: false, bytes: BODY.length });
      await failure(fetchArtifact(opts({ uri: pathToFileURL(p + '.missing').href, sha256: sha('m') })), 'KS_ARTIFACT_NOT_FOUND');
      await failure(fetchArtifact(opts({ uri: pathToFileURL(src.dir).href, sha256: sha('d') })), 'KS_ARTIFACT_NOT_FOUND');
      await failure(fetchArtifact(opts({ uri: pathToFileURL(p).href, sha256: sha('small'), maxBytes: 100 })), 'KS_ARTIFACT_TOO_LARGE');
    } finally {
      src.cleanup();
    }
  });

  it('downloads over http with the right digest, reporting progress', async () => {
    const progress: [number, number | undefined][] = [];
    const r = await fetchArtifact(opts({ onProgress: (n, t) => progress.push([n, t]) }));
    expect(r).toMatchObject({ cached: false, bytes: BODY.length });
    expect(readFileSync(r.path)).toEqual(BODY);
    expect(progress.at(-1)).toEqual([BODY.length, BODY.length]);
    expect(server.hits.get('/app.bin')).toBe(1);
  });

  it('follows a redirect, and refuses loops and non-http targets', async () => {
    expect((await fetchArtifact(opts({ uri: `${server.origin}/redirect` }))).bytes).toBe(BODY.length);
    expect(server.hits.get('/app.bin')).toBe(1);
    const loop = await failure(fetchArtifact(opts({ uri: `${server.origin}/loop`, sha256: sha('loop') })), 'KS_ARTIFACT_FETCH_FAILED');
    expect(loop.message).toContain('more than 5 redirects');
    expect(server.hits.get('/loop')).toBe(6);
    await failure(fetchArtifact(opts({ uri: `${server.origin}/to-ftp`, sha256: sha('ftp') })), 'KS_ARTIFACT_FETCH_FAILED');
  });

  it('a 404 is KS_ARTIFACT_FETCH_FAILED naming the status', async () => {
    const err = await failure(fetchArtifact(opts({ uri: `${server.origin}/missing` })), 'KS_ARTIFACT_FETCH_FAILED');
    expect(err.data.status).toBe(404);
    expect(err.message).toContain('HTTP 404');
    expectNothingCached(sha(BODY));
  });

  it('an unreachable or silent server fails within the timeout', async () => {
    const err = await failure(fetchArtifact(opts({ uri: `${server.origin}/hang`, timeoutMs: 150 })), 'KS_ARTIFACT_FETCH_FAILED');
    expect(err.message).toContain('no data for 150 ms');
  });
});

describe('fetchArtifact: digest and size', () => {
  it('a wrong digest is KS_ARTIFACT_DIGEST_MISMATCH and leaves nothing in the cache', async () => {
    const wrong = sha('something else');
    const err = await failure(fetchArtifact(opts({ sha256: wrong })), 'KS_ARTIFACT_DIGEST_MISMATCH');
    expect(err.data).toMatchObject({ expected: wrong, actual: sha(BODY) });
    expectNothingCached(wrong);
    expectNothingCached(sha(BODY));
    await failure(fetchArtifact(opts({ uri: 'files/app.bin', sha256: wrong })), 'KS_ARTIFACT_DIGEST_MISMATCH');
    expectNothingCached(wrong);
  });

  it('a digest that is not sha256 is refused as unsigned', async () => {
    await failure(fetchArtifact(opts({ sha256: 'abc' })), 'KS_ARTIFACT_UNSIGNED');
    expect(server.requests()).toBe(0);
  });

  it('a server streaming past maxBytes without a Content-Length is cut off at the limit', async () => {
    const closed = server.closed('/endless');
    const err = await failure(fetchArtifact(opts({ uri: `${server.origin}/endless`, maxBytes: 100_000 })), 'KS_ARTIFACT_TOO_LARGE');
    expect(err.data.limit).toBe(100_000);
    expect(err.data.received).toBeGreaterThan(100_000);
    const { sent, finished } = await closed;
    expect(finished).toBe(false); // the client hung up: the server never got to send its 256 MiB
    expect(sent).toBeLessThan(16 * 1024 * 1024);
    expectNothingCached(sha(BODY));
  });

  it('a Content-Length over maxBytes is refused before the body is read', async () => {
    const closed = server.closed('/announced-huge');
    const err = await failure(fetchArtifact(opts({ uri: `${server.origin}/announced-huge`, maxBytes: 100_000 })), 'KS_ARTIFACT_TOO_LARGE');
    expect(err.data.received).toBe(10 * 1024 * 1024);
    expect((await closed).finished).toBe(false);
    expectNothingCached(sha(BODY));
  });

  it('a Content-Length that lies low cannot smuggle more bytes: the body is framed by it, and fails its digest', async () => {
    const err = await failure(fetchArtifact(opts({ uri: `${server.origin}/lying-length`, maxBytes: 4096 })), 'KS_ARTIFACT_DIGEST_MISMATCH');
    expect(err.data.received).toBe(1000);
    expectNothingCached(sha(BODY));
  });
});

describe('fetchArtifact: cache', () => {
  it('a second fetch of the same digest is served from the cache, without a request', async () => {
    await fetchArtifact(opts({}));
    expect(server.requests()).toBe(1);
    const again = await fetchArtifact(opts({}));
    expect(again).toMatchObject({ cached: true, bytes: BODY.length });
    expect(server.requests()).toBe(1);
    // Any URI with that digest is the same artifact: the repository is not read either.
    const spy: RepoReader = {
      label: 'spy',
      readFile: () => {
        throw new Error('must not be called');
      },
    };
    expect(await fetchArtifact(opts({ uri: 'files/app.bin', reader: spy }))).toMatchObject({ cached: true });
  });

  it('a corrupted cache entry is detected on use and re-fetched', async () => {
    const first = await fetchArtifact(opts({}));
    writeFileSync(first.path, 'bit rot');
    const again = await fetchArtifact(opts({}));
    expect(again).toMatchObject({ cached: false, bytes: BODY.length });
    expect(server.requests()).toBe(2);
    expect(readFileSync(again.path)).toEqual(BODY);
    expect(await fetchArtifact(opts({}))).toMatchObject({ cached: true });
    expect(server.requests()).toBe(2);
  });

  it('a corrupted cache entry whose re-fetch fails is not served', async () => {
    const first = await fetchArtifact(opts({}));
    writeFileSync(first.path, 'tampered');
    await failure(fetchArtifact(opts({ uri: `${server.origin}/missing` })), 'KS_ARTIFACT_FETCH_FAILED');
    expectNothingCached(sha(BODY));
  });
});

/** A self-signed certificate for 127.0.0.1, made with the openssl CLI. */
function selfSignedCert(dir: string): { key: string; cert: string } {
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '1',
    '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')], { stdio: 'pipe' });
  return { key: readFileSync(join(dir, 'key.pem'), 'utf8'), cert: readFileSync(join(dir, 'cert.pem'), 'utf8') };
}

// Skipped (and counted in the run's summary) only where openssl is missing: where it is there, a certificate it
// cannot make is a failure, not a silent skip.
const openssl = needs('openssl');

describe.skipIf(openssl.skip)(openssl.title('fetchArtifact: https'), () => {
  it('downloads over https, follows http to https, and refuses a redirect from https down to http', async () => {
    const tls = selfSignedCert(cache.dir);
    let hits = 0;
    const secure = https.createServer(tls, (req, res) => {
      hits++;
      if (req.url === '/down') {
        res.writeHead(302, { location: `${server.origin}/app.bin` });
        res.end();
      } else serve(BODY)(req, res, server);
    });
    await new Promise<void>((resolve) => secure.listen(0, '127.0.0.1', resolve));
    const origin = `https://127.0.0.1:${(secure.address() as AddressInfo).port}`;
    const savedCa = https.globalAgent.options.ca;
    https.globalAgent.options.ca = tls.cert; // trust the test certificate, for this test only
    const upgrade = await startServer({
      '/up': (_req, res) => {
        res.writeHead(301, { location: `${origin}/app.bin` });
        res.end();
      },
    });
    try {
      expect((await fetchArtifact(opts({ uri: `${origin}/app.bin` }))).bytes).toBe(BODY.length);
      const down = await failure(fetchArtifact(opts({ uri: `${origin}/down`, sha256: sha('down') })), 'KS_ARTIFACT_FETCH_FAILED');
      expect(down.message).toContain('from https to http');
      expect(server.hits.get('/app.bin')).toBeUndefined();
      expect((await fetchArtifact(opts({ uri: `${upgrade.origin}/up`, sha256: sha(BODY) }))).cached).toBe(true);
      await fetchArtifact(opts({ uri: `${upgrade.origin}/up`, sha256: sha(BODY), cacheDir: join(cache.dir, 'other') }));
      expect(hits).toBe(3);
    } finally {
      https.globalAgent.options.ca = savedCa;
      https.globalAgent.destroy();
      await upgrade.close();
      secure.closeAllConnections();
      await new Promise((resolve) => secure.close(resolve));
    }
  });
});
