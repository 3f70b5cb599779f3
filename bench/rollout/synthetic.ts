// (c') the rollout bench's synthetic reads at scale: one gate decision over the rollout refs of 1,000 to 100,000 devices,
// unsigned, and signed + verified against devices/ certificates (in a directory, in a Git cache), with the same sample.
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { RolloutGate } from '../../dist/agent/rollout-gate.js';
import { reportAdmission } from '../../dist/agent/report-admission.js';
import { waveHash, waveOf } from '../../dist/core/rollout.js';
import type { RolloutState } from '../../dist/core/rollout-gate.js';
import { reportSigner } from '../../dist/identity/report-signature.js';
import { refListerFor } from '../../dist/source/ref-lister.js';
import { rolloutRef } from '../../dist/report/rollout-refs.js';
import { mulberry32 } from '../generate-repo.js';
import { fmt, round } from '../lib/stats.js';
import { syntheticIdentities } from './identities.js';
import { gitReaderUpTo, rollout, synthSizes, verifyReaders, WAVES } from './options.js';
import type { RolloutContext } from './run-fleet.js';

type Admission = Awaited<ReturnType<typeof reportAdmission>>;
/** What a decision's admission did. */
interface Admitted {
  counted: number;
  refused: number;
  verdicts: Record<string, number>;
  ms: number;
}
type ListOptions = Parameters<ReturnType<typeof refListerFor>['list']>[1];
interface Listing {
  prefixes: number;
  refs?: number;
  requests?: number;
  bytes?: number;
  error?: string;
  ms: number;
  m0: number;
  m1: number;
}
/** One gate decision. */
export interface Read {
  read: number;
  sampled: boolean | undefined;
  decision: string;
  prefixes: number;
  refs: number | undefined;
  listerRequests: number | undefined;
  listerBytes: number | undefined;
  serverRequests: number;
  serverBytesOut: number;
  serverBytesIn: number;
  ms: number | null;
  decideMs: number | null;
  verify?: { counted: number; refused: number; verdicts: Record<string, number>; ms: number | null };
  error: string | undefined;
}
export interface Variant {
  variant: string;
  reader?: string;
  readerSetupMs?: number | null;
  packBytes?: number;
  devicesTreeBytes?: number;
  reads: Read[];
}
interface SyntheticDevice {
  d: string;
  wave: string;
  s: RolloutState;
}
export interface SyntheticSize {
  devices: number;
  refs: number;
  refsPerDevice: number | null;
  devicesPerWave: Record<string, number>;
  refsReadableByLastWave: number;
  writeMs: number | null;
  seed: number;
  signedSetup?: { signMs: number | null; certificateBytes: number | null; refNameChars: number | null };
  reads: Read[];
  variants: Variant[];
}

/** The synthetic reads of every --synthetic size. */
export async function syntheticReads({ git, work, port, server }: RolloutContext): Promise<SyntheticSize[]> {
  const { mark, records } = server;
  // (c') synthetic reads at scale: the same fleet's rollout refs unsigned (as agents before issue 29 wrote them, and
  // no devices/) and signed (each device's key, each device enrolled in devices/), read by the same gate with the
  // same seeded sample; the signed refs are counted only once each verifies against its device's certificate.
  const synthetic: SyntheticSize[] = [];
  if (synthSizes.length) {
    const base = join(work, 'srv', 'synth-base.git');
    await git('init', '--quiet', '--bare', '--initial-branch=main', base);
    const seedWs = join(work, 'ws-synth');
    await git('init', '--quiet', '--initial-branch=main', seedWs);
    await git('-C', seedWs, 'commit', '--quiet', '--allow-empty', '-m', 'one existing commit');
    await git('-C', seedWs, 'push', '--quiet', base, 'HEAD:refs/heads/main');
    const oid = (await git('-C', base, 'rev-parse', 'refs/heads/main')).stdout.trim();
    const OLD = 'a'.repeat(40);
    const NEW = 'b'.repeat(40);
    // The new commit's state on a device: a stable mix (by a hash of its name) of a rollout under way.
    const STATES: [RolloutState, number][] = [
      ['success', 40],
      ['applying', 10],
      ['held', 50],
    ];
    const stateOf = (d: string): RolloutState => {
      let x = waveHash(`state\0${d}`);
      for (const [s, p] of STATES) if ((x -= p) < 0) return s;
      return 'held';
    };
    const identity = verifyReaders.length ? await syntheticIdentities() : undefined;
    /** A bare repository on the server holding `lines` (ref names, sorted here) as a packed-refs file, each at `oid`. */
    const writeRefs = async (name: string, lines: string[]) => {
      const bare = join(work, 'srv', `${name}.git`);
      await git('clone', '--quiet', '--bare', base, bare);
      lines.push('refs/heads/main');
      lines.sort((x, y) => (x < y ? -1 : x > y ? 1 : 0));
      writeFileSync(
        join(bare, 'packed-refs'),
        `# pack-refs with: peeled fully-peeled sorted \n${lines.map((ref) => `${oid} ${ref}\n`).join('')}`,
      );
      rmSync(join(bare, 'refs', 'heads', 'main'), { force: true });
      return bare;
    };
    /**
     * Four gate decisions from a fresh gate (a newly started device of the last wave), over `name` on the server, with
     * the bucket sample drawn from `seed` (the same for every variant of one size); `admission`: the held commit's
     * (report-admission.ts), as take-revision.ts makes it once per held commit and the gate reuses it.
     */
    const gateReads = async (name: string, seed: number, admission?: Admission, count = 4): Promise<Read[]> => {
      const lister = refListerFor(`http://127.0.0.1:${port}/${name}.git`);
      const listings: Listing[] = [];
      const refs = {
        list: async (prefixes: string[], o?: ListOptions) => {
          const m0 = await mark();
          const t = performance.now();
          try {
            const l = await lister.list(prefixes, o);
            listings.push({
              prefixes: prefixes.length,
              refs: l.refs.length,
              requests: l.requests,
              bytes: l.bytes,
              ms: performance.now() - t,
              m0,
              m1: await mark(),
            });
            return l;
          } catch (e) {
            listings.push({
              prefixes: prefixes.length,
              error: `${(e as { code?: string }).code ?? ''} ${(e as Error).message}`.trim(),
              ms: performance.now() - t,
              m0,
              m1: await mark(),
            });
            throw e;
          }
        },
      };
      const seen = new Map<string, number>();
      const store = {
        firstSuccessSeen: (rev: string, key: string) => seen.get(`${rev}\0${key}`),
        recordFirstSuccess: (rev: string, key: string, at: number) =>
          seen.has(`${rev}\0${key}`) || seen.set(`${rev}\0${key}`, at),
        goodState: () => undefined,
      };
      // What each decision's admission did: reports verified and counted, refused (with the verdicts), its time.
      let admitted: Admitted | undefined;
      const counting = admission && {
        requireEnrolled: admission.requireEnrolled,
        admit: async (reports: Parameters<Admission['admit']>[0]) => {
          const t = performance.now();
          const a = await admission.admit(reports);
          const verdicts: Record<string, number> = {};
          for (const x of a.refused) verdicts[x.verification.verdict] = (verdicts[x.verification.verdict] ?? 0) + 1;
          admitted = { counted: a.counted.length, refused: a.refused.length, verdicts, ms: performance.now() - t };
          return a;
        },
      };
      const gate = new RolloutGate({
        refs,
        store,
        now: Date.now,
        random: mulberry32(seed),
      } as unknown as ConstructorParameters<typeof RolloutGate>[0]);
      const candidate = {
        commit: NEW,
        rollout,
        wave: WAVES.length - 1,
        state: { components: [] },
        ...(counting && { admission: counting }),
      };
      const reads: Read[] = [];
      for (let i = 0; i < count; i++) {
        admitted = undefined;
        globalThis.gc?.();
        const t = performance.now();
        const d = await gate.decide([candidate] as unknown as Parameters<RolloutGate['decide']>[0]);
        const decideMs = performance.now() - t;
        const l = listings[listings.length - 1]!;
        const recs = await records(l.m0, l.m1);
        // Set by the admission's admit, if this decision made one (a callback TypeScript does not follow).
        const got = admitted as Admitted | undefined;
        reads.push({
          read: i + 1,
          sampled: 'error' in d ? undefined : !d.complete,
          decision: 'error' in d ? `error: ${d.error.message.slice(0, 160)}` : d.decisions.get(NEW)!.reason,
          prefixes: l.prefixes,
          refs: l.refs,
          listerRequests: l.requests,
          listerBytes: l.bytes,
          serverRequests: recs.length,
          serverBytesOut: recs.reduce((s, x) => s + x.bytes, 0),
          serverBytesIn: recs.reduce((s, x) => s + x.received, 0),
          // The listing alone (as this bench measured a read before issue 29), and the whole decision: the listing,
          // parsing the refs, verifying the reports against their devices' certificates, the gate itself.
          ms: round(l.ms),
          decideMs: round(decideMs),
          ...(got && {
            verify: { counted: got.counted, refused: got.refused, verdicts: got.verdicts, ms: round(got.ms) },
          }),
          error: l.error,
        });
      }
      return reads;
    };
    for (const size of synthSizes) {
      const t0 = performance.now();
      const devs: SyntheticDevice[] = [];
      const perWave: Record<string, number> = Object.fromEntries(WAVES.map((w) => [w.name, 0]));
      for (let i = 1; i <= size; i++) {
        const d = `dev-${String(i).padStart(6, '0')}`;
        const wave = waveOf(rollout, d, {}).wave.name;
        devs.push({ d, wave, s: stateOf(d) });
        perWave[wave]!++;
      }
      const reportsOf = ({ d, wave, s }: SyntheticDevice) => [
        { wave, device: d, commit: NEW, state: s },
        ...(s !== 'success' ? [{ wave, device: d, commit: OLD, state: 'success' as const }] : []),
      ];
      const name = `synth-${size}`;
      const bare = await writeRefs(
        name,
        devs.flatMap((x) => reportsOf(x).map((r) => rolloutRef(r))),
      );
      const writeMs = performance.now() - t0;
      const refsTotal = devs.reduce((n, x) => n + reportsOf(x).length, 0);
      // What a device of the last wave reads: the waves before it and its own, whole, in each read.
      const readable = (
        await git(
          '-C',
          bare,
          'for-each-ref',
          '--format=%(refname)',
          ...WAVES.map((w) => `refs/keystone-rollout/${w.name}/`),
        )
      ).stdout
        .split('\n')
        .filter(Boolean).length;
      const seed = 0x5eed ^ size;
      const variants: Variant[] = [{ variant: 'unsigned', reads: await gateReads(name, seed) }];
      rmSync(bare, { recursive: true, force: true });
      process.stderr.write(
        `synthetic ${fmt(size)} devices, unsigned: ${variants[0]!.reads.map((x) => (x.error ? `read ${x.read} failed` : `read ${x.read} ${fmt(x.refs)} refs ${fmt(x.serverBytesOut)} B ${fmt(x.decideMs)} ms`)).join(', ')}\n`,
      );
      let signedSetup:
        { signMs: number | null; certificateBytes: number | null; refNameChars: number | null } | undefined;
      if (identity) {
        // Every device: a key pair, its certificate (devices/<name>.cert, signed by the enrolment key) and its refs
        // signed with its key (each name ends `.<key id><signature>`).
        const t1 = performance.now();
        const certs: string[] = [];
        const lines: string[] = [];
        for (const [i, x] of devs.entries()) {
          const key = identity.deviceKey();
          certs.push(identity.certificate(x.d, key));
          const signer = reportSigner(key);
          for (const r of reportsOf(x)) lines.push(rolloutRef(r, signer));
          if ((i + 1) % 10_000 === 0)
            process.stderr.write(
              `  ${fmt(i + 1)} devices enrolled and signed (${fmt((performance.now() - t1) / 1000, 1)} s)\n`,
            );
        }
        const signMs = performance.now() - t1;
        const signedName = `${name}-signed`;
        const signedBare = await writeRefs(signedName, lines);
        const meanRef = round(lines.reduce((n, l) => n + l.length, 0) / lines.length, 1);
        signedSetup = {
          signMs: round(signMs),
          certificateBytes: round(certs.reduce((n, c) => n + c.length, 0) / certs.length),
          refNameChars: meanRef,
        };
        for (const kindOfReader of verifyReaders) {
          const t2 = performance.now();
          const reader =
            kindOfReader === 'dir'
              ? identity.directoryOf(join(work, `synth-dir-${size}`), devs, certs)
              : await identity.gitCacheOf(join(work, `synth-cache-${size}.git`), devs, certs);
          const readerSetupMs = performance.now() - t2;
          const admission = await reportAdmission({
            raw: reader.reader,
            signed: reader.reader,
            rollout,
            enrollmentKeys: [identity.enrollmentPublic],
            now: Date.now,
          });
          const count = kindOfReader === 'git' && size > gitReaderUpTo ? 1 : 4;
          const reads = await gateReads(signedName, seed, admission, count);
          variants.push({
            variant: `signed, verified (${kindOfReader === 'dir' ? 'devices/ in a directory' : 'devices/ in a Git cache'})`,
            reader: kindOfReader,
            readerSetupMs: round(readerSetupMs),
            ...reader.info,
            reads,
          });
          reader.remove();
          process.stderr.write(
            `synthetic ${fmt(size)} devices, signed (${kindOfReader}): ${reads.map((x) => (x.error ? `read ${x.read} failed` : `read ${x.read} ${fmt(x.refs)} refs ${fmt(x.serverBytesOut)} B ${fmt(x.decideMs)} ms${x.verify ? ` (${x.verify.counted} counted, ${x.verify.refused} refused)` : ''}`)).join(', ')}\n`,
          );
        }
        rmSync(signedBare, { recursive: true, force: true });
      }
      synthetic.push({
        devices: size,
        refs: refsTotal,
        refsPerDevice: round(refsTotal / size, 2),
        devicesPerWave: perWave,
        refsReadableByLastWave: readable,
        writeMs: round(writeMs),
        seed,
        ...(signedSetup && { signedSetup }),
        // Kept at the top level too: the unsigned reads, as before issue 29.
        reads: variants[0]!.reads,
        variants,
      });
    }
  }
  return synthetic;
}
