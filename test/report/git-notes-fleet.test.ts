// Reports that scale (SPEC §8), against a real Git smart-HTTP server: many devices reporting one commit at once never
// collide, a report costs one request in the steady state (a receive-pack POST, no ref advertisement), and a repository that already has the shared
// refs/notes/keystone of earlier agents keeps its lines while new ones go to the per-device refs.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { statusContext } from '../../src/report/commit-status.js';
import {
  decodeDeviceName,
  deviceNotesRef,
  deviceOfNotesRef,
  encodeDeviceName,
  LEGACY_NOTES_REF,
} from '../../src/report/device-notes-ref.js';
import { readStatusNotes } from '../../src/fleet-view/status-notes-read.js';
import { parseStatusNote } from '../../src/report/status-note.js';
import { cliAllLines, fetchNotes, git, NotesFixture, status } from '../support/notes-fixture.js';

const exec = promisify(execFile);
let fx: NotesFixture;
beforeAll(async () => {
  fx = await NotesFixture.start();
});
afterAll(async () => {
  await fx.close();
});
afterEach(() => fx.cleanDirs());

/** Requests of one kind in a slice of the server's log. */
function kinds(reqs: { method: string; path: string; query: string }[]) {
  return {
    total: reqs.length,
    pushAdverts: reqs.filter((r) => r.path.endsWith('/info/refs') && r.query.includes('git-receive-pack')).length,
    pushes: reqs.filter((r) => r.method === 'POST' && r.path.endsWith('/git-receive-pack')).length,
    fetches: reqs.filter((r) => r.path.endsWith('/git-upload-pack') || r.query.includes('git-upload-pack')).length,
  };
}

describe('device notes ref names', () => {
  const names = [
    'dev-a',
    'edge-1.example.com',
    'a/b',
    'a%2Fb',
    'a b',
    '..',
    '.hidden',
    'trailing.',
    'x.lock',
    'a..b',
    'a@{1}',
    'ü-gerät',
    '~^:?*[\\',
    '@',
    'A',
    'a',
  ];

  it('maps every name to a ref git accepts, never two names to one ref, and back', async () => {
    const refs = names.map(deviceNotesRef);
    for (const ref of refs) await exec('git', ['check-ref-format', ref]); // throws on a ref git refuses
    expect(new Set(refs).size).toBe(names.length);
    // A name with a space is no device's (`--device` refuses it): its ref is not read back as one.
    expect(refs.map((r) => deviceOfNotesRef(r))).toEqual(names.map((n) => (n === 'a b' ? undefined : n)));
    // Only the encoding a device writes counts: edge%2D7 must not pass for edge-7's own ref; nor control characters.
    expect(deviceOfNotesRef('refs/notes/keystone-devices/edge%2D7')).toBeUndefined();
    expect(deviceOfNotesRef('refs/notes/keystone-devices/x%0A%23%23%20ALL%20GREEN')).toBeUndefined();
    expect(deviceOfNotesRef('refs/notes/keystone-devices/x%1B%5B2J')).toBeUndefined();
    expect(names.map((n) => decodeDeviceName(encodeDeviceName(n)))).toEqual(names);
    // Readable where the name allows it; `/` never makes a directory of another device's ref.
    expect(deviceNotesRef('edge-1.example.com')).toBe('refs/notes/keystone-devices/edge-1.example.com');
    expect(deviceNotesRef('a/b')).toBe('refs/notes/keystone-devices/a%2Fb');
    expect(deviceNotesRef('a%2Fb')).toBe('refs/notes/keystone-devices/a%252Fb');
  });
});

describe('note lines anyone could have pushed', () => {
  it('carry no control characters into fields or descriptions, and a context with one is no line', () => {
    const [line, ...rest] = parseStatusNote(
      'keystone/x success 2026-12-01T00:00:00.000Z target=\u001b[2J applied\u0007 ok\nkeystone/\u001by error 2026-12-01T00:00:00.000Z bad\n',
    );
    expect(rest).toEqual([]);
    expect(line).toMatchObject({ context: 'keystone/x', fields: {}, description: 'target= [2J applied  ok' });
  });
});

describe('many devices on one remote', () => {
  it('12 devices reporting one commit at once: no collision, one request per report, every line present', async () => {
    const { url, clone, commit } = await fx.remoteWithCommit('fleet');
    const devices = Array.from({ length: 12 }, (_, i) => `edge-${String(i + 1).padStart(2, '0')}`);
    const reporters = devices.map((d) => fx.reporter(url, d, { pushAttempts: 1 }));
    // A slow server holds every request, so all twelve are in flight together (with the shared ref, all but one lost).
    fx.server.delayMs = 30;
    const first = fx.server.requests.length;
    try {
      await Promise.all(
        reporters.map((r, i) => r.deliver(status(commit, devices[i]!, 'pending', `applying on ${devices[i]}`))),
      );
    } finally {
      fx.server.delayMs = 0;
    }
    // One receive-pack POST per device and no ref advertisement (whose size grows with the fleet), no fetch, no retry:
    // pushAttempts 1 leaves no room for one.
    expect(kinds(fx.served('fleet', first))).toEqual({ total: 12, pushAdverts: 0, pushes: 12, fetches: 0 });
    expect(fx.served('fleet', first).every((r) => r.status === 200)).toBe(true);

    // The steady state: the next report of every device, at once again, costs the same one request.
    const second = fx.server.requests.length;
    await Promise.all(
      reporters.map((r, i) =>
        r.deliver(status(commit, devices[i]!, 'success', `applied on ${devices[i]}`, Date.UTC(2025, 0, 2, 3, 5, 0))),
      ),
    );
    const steady = kinds(fx.served('fleet', second));
    expect(steady).toEqual({ total: 12, pushAdverts: 0, pushes: 12, fetches: 0 });
    expect(steady.total / devices.length).toBe(1);

    // Plain git shows every device's line under the commit.
    expect(await cliAllLines(clone, commit)).toEqual(
      devices.map((d) => `keystone/${d} success 2025-01-02T03:05:00.000Z applied on ${d}`),
    );
    // And so does the reader the fleet view uses, over the same one fetch.
    const lines = await readStatusNotes(`${clone}/.git`, commit);
    expect(lines.map((l) => [l.context, l.state, l.ref])).toEqual(
      devices.map((d) => [statusContext(d), 'success', deviceNotesRef(d)]),
    );
  });
});

describe('a repository that already has the shared refs/notes/keystone', () => {
  it('cannot hold refs under refs/notes/keystone/ (why the per-device refs are siblings)', async () => {
    const { bare, clone, commit } = await fx.remoteWithCommit('conflict');
    await git(
      clone,
      'notes',
      '--ref',
      'keystone',
      'add',
      '-m',
      'keystone/old success 2024-12-31T00:00:00.000Z applied',
      commit,
    );
    await git(clone, 'push', '--quiet', 'origin', 'refs/notes/keystone:refs/notes/keystone');
    const refused = await git(
      clone,
      'push',
      '--quiet',
      'origin',
      'refs/notes/keystone:refs/notes/keystone/dev-a',
    ).catch((e: { stderr: string }) => e.stderr);
    expect(refused).toMatch(/remote rejected|failed to update ref|cannot lock ref/);
    await expect(
      exec('git', ['-C', bare, 'rev-parse', '--verify', '--quiet', 'refs/notes/keystone/dev-a']),
    ).rejects.toThrow();
  });

  it('keeps the old lines visible, writes new ones to the per-device refs, and never moves the shared ref', async () => {
    const { url, clone, commit } = await fx.remoteWithCommit('upgrade');
    const older = (await git(clone, 'rev-parse', 'HEAD')).trim();
    // What earlier agents left: dev-a and dev-b on the shared ref, one line each.
    await git(
      clone,
      'notes',
      '--ref',
      'keystone',
      'add',
      '-m',
      'keystone/dev-a pending 2024-12-31T00:00:00.000Z applying\nkeystone/dev-b success 2024-12-31T00:00:01.000Z applied',
      older,
    );
    await git(clone, 'push', '--quiet', 'origin', 'refs/notes/keystone:refs/notes/keystone');
    const shared = (await git(clone, 'ls-remote', 'origin', LEGACY_NOTES_REF)).split('\t')[0];

    // dev-a is upgraded and reports the same commit again.
    await fx.reporter(url, 'dev-a').deliver(status(commit, 'dev-a', 'success', 'applied'));

    expect((await git(clone, 'ls-remote', 'origin', LEGACY_NOTES_REF)).split('\t')[0]).toBe(shared);
    expect(await cliAllLines(clone, commit)).toEqual([
      'keystone/dev-a pending 2024-12-31T00:00:00.000Z applying',
      'keystone/dev-a success 2025-01-02T03:04:05.000Z applied',
      'keystone/dev-b success 2024-12-31T00:00:01.000Z applied',
    ]);
    // The reader takes a device's own ref over its old line, and the old ref for a device not upgraded yet.
    await fetchNotes(clone);
    expect((await readStatusNotes(`${clone}/.git`, commit)).map((l) => [l.context, l.state, l.ref])).toEqual([
      ['keystone/dev-a', 'success', deviceNotesRef('dev-a')],
      ['keystone/dev-b', 'success', LEGACY_NOTES_REF],
    ]);
  });
});
