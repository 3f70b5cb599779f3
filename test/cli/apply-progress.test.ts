// The two faces of `keystonectl apply`'s progress: plain lines for logs and pipes, a table redrawn in place on a terminal.
import { describe, expect, it } from 'vitest';
import { plainProgress, terminalProgress, type ProgressEvent } from '../../src/cli/render/apply-progress.js';

const events: ProgressEvent[] = [
  { event: 'accepted', revision: 'manual:0123456789ab', planFile: 'plans/edge.toml', suspendedSync: true },
  { event: 'reconcile', stopOrder: ['web', 'api'], startOrder: ['api', 'web'], noTouch: ['influxdb', 'telemetry'] },
  {
    event: 'pull',
    component: 'api',
    image: 'acme/api:1.5',
    status: 'Downloading',
    currentBytes: 3 * 1024 * 1024,
    totalBytes: 12 * 1024 * 1024,
  },
  { event: 'state', component: 'api', state: 'starting' },
  { event: 'state', component: 'influxdb', state: 'running' },
  { event: 'state', component: 'api', state: 'running' },
  { event: 'state', component: 'web', state: 'failed', reason: 'not healthy' },
  {
    event: 'done',
    outcome: 'failure',
    summary: 'failed: web (not healthy)',
    converged: false,
    components: [{ name: 'web', state: 'failed', pid: null, reason: 'not healthy' }],
  },
];

describe('apply progress', () => {
  it('plain: one line per event, in the log style of SPEC §11', () => {
    let out = '';
    const view = plainProgress((s) => (out += s));
    for (const e of events) view.update(e);
    expect(out.split('\n')).toEqual([
      '[apply] revision=manual:0123456789ab plan=plans/edge.toml msg=accepted by the agent (the Git sync is suspended until `keystonectl resume`)',
      '[agent] reconcile plan stop_order=[web api] start_order=[api web] no_touch=[influxdb telemetry]',
      '[containers] component=api image=acme/api:1.5 status="Downloading" mb=3.0/12.0 msg=pulling image',
      '[supervisor] component=api state=starting',
      '[supervisor] component=influxdb state=running',
      '[supervisor] component=api state=running',
      '[supervisor] component=web state=failed reason="not healthy"',
      '[apply] outcome=failure converged=false msg=failed: web (not healthy)',
      '',
    ]);
  });

  it('terminal: redraws the rows of the components it touches in place, untouched ones summed up', () => {
    let out = '';
    let t = 0;
    const view = terminalProgress(
      (s) => (out += s),
      () => (t += 100),
    );
    for (const e of events) view.update(e);
    const frames = out.split('\x1b[5A');
    // Five lines a frame (header, two rows, untouched, clock): one after the reconcile, one per pull or state of a
    // touched component (influxdb's is not one), and the final one.
    expect(frames.length).toBe(6);
    expect(frames.some((f) => f.includes('api  pulling acme/api:1.5 3.0/12.0 MB'))).toBe(true);
    const last = frames.at(-1)!.replaceAll('\x1b[2K', '');
    expect(last.startsWith('stop [web api]  start [api web]\n')).toBe(true);
    expect(last).toContain('  ✔ api  running\n');
    expect(last).toContain('  ✘ web  failed  (not healthy)\n');
    expect(last).toContain('  = 2 untouched (no restart)\n');
    expect(last.trimEnd().split('\n').at(-1)).toBe('✘ failure: failed: web (not healthy)');
    // influxdb is not touched by the apply: its state never gets a row.
    expect(out).not.toMatch(/influxdb\s+running/);
  });
});
