// The pure reconcile of SPEC §4, table-driven over the four-component stack of the worked example.
import { describe, expect, it } from 'vitest';
import { diff, EMPTY_ACTUAL, reasonText, type ActualState, type Reason } from '../../src/core/diff.js';
import {
  actual,
  desired,
  instance,
  stack,
  update,
  without,
  type ActualTweaks,
  type ComponentSpec,
} from '../support/state-builder.js';

const STACK_LAYERS = [['influxdb'], ['api', 'telemetry'], ['web']];
const HELD = 'held stopped (crash-looping, or by an operator) until changed or started';

interface Case {
  name: string;
  /** What the device ran: these specs fully running (undefined = a fresh device), then `tweaks`. */
  ran?: ComponentSpec[];
  tweaks?: ActualTweaks;
  /** The new revision. */
  want: ComponentSpec[];
  stop: string[];
  start: string[];
  noTouch: string[];
  /** Checked per key; components not named are not checked here (the property test covers them). */
  reasons?: Record<string, string>;
  codes?: Record<string, Reason>;
  layers?: string[][];
}

const bumpApi = update(stack(), 'api', { version: '1.5.0' });
const bumpInflux = update(stack(), 'influxdb', { version: '2.7.6' });

const cases: Case[] = [
  // The worked example's three reconciles (reference/four-component-stack.md).
  {
    name: 'worked example 1: a fresh device starts everything in layer order',
    want: stack(),
    stop: [],
    start: ['influxdb', 'api', 'telemetry', 'web'],
    noTouch: [],
    reasons: { influxdb: 'new', api: 'new', telemetry: 'new', web: 'new' },
    layers: STACK_LAYERS,
  },
  {
    name: 'worked example 2: bumping api restarts api and its hard dependent web only',
    ran: stack(),
    want: bumpApi,
    stop: ['web', 'api'],
    start: ['api', 'web'],
    noTouch: ['influxdb', 'telemetry'],
    reasons: {
      api: 'version 1.4.0 → 1.5.0',
      web: 'hard dependency api restarts',
      influxdb: 'unchanged',
      telemetry: 'unchanged',
    },
    codes: { api: { kind: 'version', from: '1.4.0', to: '1.5.0' }, web: { kind: 'cascade', dependency: 'api' } },
    layers: STACK_LAYERS,
  },
  {
    name: 'worked example 3: a new influxdb cascades through api to web, telemetry is ordering-only',
    ran: stack(),
    want: bumpInflux,
    stop: ['web', 'api', 'influxdb'],
    start: ['influxdb', 'api', 'web'],
    noTouch: ['telemetry'],
    reasons: {
      influxdb: 'version 2.7.5 → 2.7.6',
      api: 'hard dependency influxdb restarts',
      web: 'hard dependency api restarts',
      telemetry: 'unchanged',
    },
  },
  {
    name: 'a same-version change of the environment is "configuration changed"',
    ran: stack(),
    want: update(stack(), 'influxdb', { env: { INFLUXD_LOG_LEVEL: 'debug' } }),
    stop: ['web', 'api', 'influxdb'],
    start: ['influxdb', 'api', 'web'],
    noTouch: ['telemetry'],
    reasons: { influxdb: 'configuration changed', api: 'hard dependency influxdb restarts' },
    codes: { influxdb: { kind: 'configuration' } },
  },
  {
    name: 'a configuration change of a leaf restarts only the leaf',
    ran: stack(),
    want: update(stack(), 'web', { env: { GREETING: 'hi' } }),
    stop: ['web'],
    start: ['web'],
    noTouch: ['influxdb', 'api', 'telemetry'],
    reasons: { web: 'configuration changed' },
  },
  {
    name: 'an unchanged revision touches nothing',
    ran: stack(),
    want: stack(),
    stop: [],
    start: [],
    noTouch: ['influxdb', 'api', 'telemetry', 'web'],
    reasons: { influxdb: 'unchanged', api: 'unchanged', telemetry: 'unchanged', web: 'unchanged' },
    layers: STACK_LAYERS,
  },
  {
    name: 'removed components are stopped dependents first',
    ran: stack(),
    want: without(stack(), 'api', 'web'),
    stop: ['web', 'api'],
    start: [],
    noTouch: ['influxdb', 'telemetry'],
    reasons: { api: 'removed', web: 'removed', influxdb: 'unchanged', telemetry: 'unchanged' },
    layers: [['influxdb'], ['telemetry']],
  },
  {
    name: 'an empty revision stops everything, in the reverse of the recorded start order',
    ran: stack(),
    want: [],
    stop: ['web', 'telemetry', 'api', 'influxdb'],
    start: [],
    noTouch: [],
    reasons: { influxdb: 'removed', api: 'removed', telemetry: 'removed', web: 'removed' },
    layers: [],
  },
  {
    name: 'reordering the plan changes the layers but restarts nothing',
    ran: stack(),
    want: [stack()[0]!, stack()[2]!, stack()[1]!, stack()[3]!],
    stop: [],
    start: [],
    noTouch: ['influxdb', 'telemetry', 'api', 'web'],
    layers: [['influxdb'], ['telemetry', 'api'], ['web']],
  },
  {
    name: 'renaming a component in the plan is a removal and a new component',
    ran: stack(),
    want: update(stack(), 'telemetry', { name: 'metrics' }),
    stop: ['telemetry'],
    start: ['metrics'],
    noTouch: ['influxdb', 'api', 'web'],
    reasons: { telemetry: 'removed', metrics: 'new' },
  },
  {
    name: 'a removed component that is not running is reported but not stopped',
    ran: stack(),
    tweaks: { set: { web: { running: false } } },
    want: without(stack(), 'web'),
    stop: [],
    start: [],
    noTouch: ['influxdb', 'api', 'telemetry'],
    reasons: { web: 'removed' },
  },
  {
    name: 'extras in the record are stopped dependents first, before restarts (removed go first among equals)',
    ran: stack(),
    tweaks: { add: [instance('legacy'), instance('sidecar', { deps: [{ on: 'legacy' }] })] },
    want: bumpApi,
    stop: ['sidecar', 'legacy', 'web', 'api'],
    start: ['api', 'web'],
    noTouch: ['influxdb', 'telemetry'],
    reasons: { legacy: 'removed', sidecar: 'removed' },
    codes: { legacy: { kind: 'removed' } },
  },
  {
    name: 'a removed component that a running one recorded as its dependency stops after it',
    ran: stack(),
    // The record says web ran with an ordering dependency on the (since removed) cache as well.
    tweaks: {
      add: [instance('cache')],
      set: {
        web: {
          dependencies: [
            { component: 'api', type: 'hard' },
            { component: 'cache', type: 'ordering' },
          ],
        },
      },
    },
    want: bumpApi,
    stop: ['web', 'cache', 'api'],
    start: ['api', 'web'],
    noTouch: ['influxdb', 'telemetry'],
  },
  {
    name: "the stop order follows the recorded (actual) edges, not the new revision's",
    ran: stack(),
    // The running api was started with an ordering dependency on web (an older revision): it stops first.
    tweaks: { set: { api: { dependencies: [{ component: 'web', type: 'ordering' }] }, web: { dependencies: [] } } },
    want: bumpApi,
    stop: ['api', 'web'],
    start: ['api', 'web'],
    noTouch: ['influxdb', 'telemetry'],
  },
  {
    name: 'a component that is not running is started and its hard dependents restarted',
    ran: stack(),
    tweaks: { set: { influxdb: { running: false } } },
    want: stack(),
    stop: ['web', 'api'],
    start: ['influxdb', 'api', 'web'],
    noTouch: ['telemetry'],
    reasons: { influxdb: 'not running', api: 'hard dependency influxdb restarts', web: 'hard dependency api restarts' },
    codes: { influxdb: { kind: 'not-running' } },
  },
  {
    name: 'a component with no record is new, and its hard dependents restart',
    ran: stack(),
    tweaks: { drop: ['api'] },
    want: stack(),
    stop: ['web'],
    start: ['api', 'web'],
    noTouch: ['influxdb', 'telemetry'],
    reasons: { api: 'new', web: 'hard dependency api restarts' },
  },
  {
    name: 'a new hard dependency restarts its dependent (dependencies are not in the hash, the new one is)',
    ran: stack(),
    want: [
      ...update(stack(), 'api', {
        deps: [
          { on: 'influxdb', type: 'hard' },
          { on: 'cache', type: 'hard' },
        ],
      }),
      { name: 'cache', id: 'com.acme.cache', version: '7.2.0' },
    ],
    stop: ['web', 'api'],
    start: ['cache', 'api', 'web'],
    noTouch: ['influxdb', 'telemetry'],
    reasons: { cache: 'new', api: 'hard dependency cache restarts' },
    layers: [['influxdb', 'cache'], ['api', 'telemetry'], ['web']],
  },
  {
    name: 'a held (crash-looping) unchanged component is left alone with its own reason',
    ran: stack(),
    tweaks: { set: { api: { running: false, held: true } } },
    want: stack(),
    stop: [],
    start: [],
    noTouch: ['influxdb', 'api', 'telemetry', 'web'],
    reasons: { api: HELD, web: 'unchanged' },
    codes: { api: { kind: 'held' } },
  },
  {
    name: 'a held component that the revision changes is restarted (it is stopped already)',
    ran: stack(),
    tweaks: { set: { api: { running: false, held: true } } },
    want: bumpApi,
    stop: ['web'],
    start: ['api', 'web'],
    noTouch: ['influxdb', 'telemetry'],
    reasons: { api: 'version 1.4.0 → 1.5.0', web: 'hard dependency api restarts' },
  },
  {
    // A judgement call, documented: the hard cascade of SPEC §4 reaches a held component too, so a
    // revision that fixes its database gives a crash-looping api another go.
    name: 'a held component whose hard dependency restarts is restarted by the cascade',
    ran: stack(),
    tweaks: { set: { api: { running: false, held: true } } },
    want: bumpInflux,
    stop: ['web', 'influxdb'],
    start: ['influxdb', 'api', 'web'],
    noTouch: ['telemetry'],
    reasons: { api: 'hard dependency influxdb restarts' },
  },
  {
    name: 'a held dependency that is not restarted does not cascade',
    ran: stack(),
    tweaks: { set: { influxdb: { running: false, held: true } } },
    want: stack(),
    stop: [],
    start: [],
    noTouch: ['influxdb', 'api', 'telemetry', 'web'],
    reasons: { influxdb: HELD, api: 'unchanged' },
  },
  {
    name: 'an actual hash of an unknown hash version counts as changed',
    ran: stack(),
    tweaks: { set: { api: { hash: 'v999:0000000000000000000000000000000000000000000000000000000000000000' } } },
    want: stack(),
    stop: ['web', 'api'],
    start: ['api', 'web'],
    noTouch: ['influxdb', 'telemetry'],
    reasons: { api: 'configuration changed', web: 'hard dependency api restarts' },
  },
  {
    name: 'an actual hash that is no component hash at all counts as changed',
    ran: stack(),
    tweaks: { set: { web: { hash: 'not-a-hash' } } },
    want: stack(),
    stop: ['web'],
    start: ['web'],
    noTouch: ['influxdb', 'api', 'telemetry'],
  },
  {
    name: 'a version recorded differently with an equal hash is no change (the hash decides)',
    ran: stack(),
    tweaks: { set: { api: { version: '0.0.1' } } },
    want: stack(),
    stop: [],
    start: [],
    noTouch: ['influxdb', 'api', 'telemetry', 'web'],
  },
  {
    name: 'an ordering-only dependent never restarts, nor do its own hard dependents',
    ran: [...stack(), { name: 'exporter', deps: [{ on: 'telemetry', type: 'hard' }] }],
    want: [...bumpInflux, { name: 'exporter', deps: [{ on: 'telemetry', type: 'hard' }] }],
    stop: ['web', 'api', 'influxdb'],
    start: ['influxdb', 'api', 'web'],
    noTouch: ['telemetry', 'exporter'],
    reasons: { telemetry: 'unchanged', exporter: 'unchanged' },
    layers: [['influxdb'], ['api', 'telemetry'], ['web', 'exporter']],
  },
  {
    name: 'a restart reaching a component through both edge kinds cascades (one hard path is enough)',
    ran: [
      { name: 'db' },
      { name: 'queue', deps: [{ on: 'db', type: 'ordering' }] },
      {
        name: 'worker',
        deps: [
          { on: 'queue', type: 'ordering' },
          { on: 'db', type: 'hard' },
        ],
      },
    ],
    want: [
      { name: 'db', env: { MODE: 'wal' } },
      { name: 'queue', deps: [{ on: 'db', type: 'ordering' }] },
      {
        name: 'worker',
        deps: [
          { on: 'queue', type: 'ordering' },
          { on: 'db', type: 'hard' },
        ],
      },
    ],
    stop: ['worker', 'db'],
    start: ['db', 'worker'],
    noTouch: ['queue'],
    reasons: { worker: 'hard dependency db restarts' },
  },
  {
    name: 'a cascade names the earliest restarting hard dependency in start order',
    ran: [{ name: 'a' }, { name: 'b' }, { name: 'c', deps: [{ on: 'b' }, { on: 'a' }] }],
    want: [
      { name: 'a', version: '2.0.0' },
      { name: 'b', version: '2.0.0' },
      { name: 'c', deps: [{ on: 'b' }, { on: 'a' }] },
    ],
    stop: ['c', 'b', 'a'],
    start: ['a', 'b', 'c'],
    noTouch: [],
    reasons: { c: 'hard dependency a restarts' },
  },
  {
    name: 'within a layer plan order decides, whatever the dependency order',
    want: [
      { name: 'z', deps: [{ on: 'y' }] },
      { name: 'y' },
      { name: 'x' },
      { name: 'w', deps: [{ on: 'x' }, { on: 'z' }] },
    ],
    stop: [],
    start: ['y', 'x', 'z', 'w'],
    noTouch: [],
    layers: [['y', 'x'], ['z'], ['w']],
  },
];

describe('diff (table)', () => {
  it.each(cases)('$name', (c) => {
    const state = desired(c.want);
    const act: ActualState = c.ran ? actual(desired(c.ran), c.tweaks) : actual(undefined, c.tweaks);
    const r = diff(state, act);
    expect({ stop: r.stopOrder, start: r.startOrder, noTouch: r.noTouch }).toEqual({
      stop: c.stop,
      start: c.start,
      noTouch: c.noTouch,
    });
    for (const [name, text] of Object.entries(c.reasons ?? {})) expect(r.reasons[name], `reason of ${name}`).toBe(text);
    for (const [name, code] of Object.entries(c.codes ?? {}))
      expect(r.reasonCodes[name], `reason code of ${name}`).toEqual(code);
    // Layers are always those of the whole desired plan, whatever restarts.
    expect(r.layers).toEqual(state.layers);
    if (c.layers) expect(r.layers).toEqual(c.layers);
    // Every component of either side has a reason, as text and as the same reason in data.
    const everyone = new Set([...state.components.map((x) => x.name), ...act.components.map((x) => x.name)]);
    expect(Object.keys(r.reasons).sort()).toEqual([...everyone].sort());
    for (const n of everyone) expect(r.reasons[n]).toBe(reasonText(r.reasonCodes[n]!));
  });
});

describe('diff', () => {
  it('takes EMPTY_ACTUAL as a fresh device', () => {
    const state = desired(stack());
    expect(diff(state, EMPTY_ACTUAL)).toEqual(diff(state, actual()));
  });

  it('leaves its inputs as they were', () => {
    const state = desired(bumpApi);
    const act = actual(desired(stack()), { set: { influxdb: { running: false } }, add: [instance('old')] });
    const before = structuredClone({ state, act });
    const r = diff(state, act);
    expect({ state, act }).toEqual(before);
    // The layers are a copy: a caller editing the result cannot corrupt the desired state.
    r.layers[0]!.push('x');
    expect(state.layers[0]).toEqual(['influxdb']);
  });

  it('is serialisable data (the CLI, the API and the commit status render the one object)', () => {
    const r = diff(desired(bumpApi), actual(desired(stack()), { add: [instance('old')] }));
    expect(JSON.parse(JSON.stringify(r))).toEqual(r);
  });

  it('words every reason kind as SPEC §4 does', () => {
    expect(reasonText({ kind: 'new' })).toBe('new');
    expect(reasonText({ kind: 'version', from: '1.4.0', to: '1.5.0' })).toBe('version 1.4.0 → 1.5.0');
    expect(reasonText({ kind: 'configuration' })).toBe('configuration changed');
    expect(reasonText({ kind: 'cascade', dependency: 'influxdb' })).toBe('hard dependency influxdb restarts');
    expect(reasonText({ kind: 'removed' })).toBe('removed');
    expect(reasonText({ kind: 'unchanged' })).toBe('unchanged');
    expect(reasonText({ kind: 'not-running' })).toBe('not running');
    expect(reasonText({ kind: 'held' })).toBe(HELD);
  });

  it('stops removed components in the reverse of their recorded start order (the record is ordered input)', () => {
    const state = desired(stack());
    const ab = actual(desired(stack()), { add: [instance('a'), instance('b')] });
    const ba = actual(desired(stack()), { add: [instance('b'), instance('a')] });
    expect(diff(state, ab).stopOrder).toEqual(['b', 'a']);
    expect(diff(state, ba).stopOrder).toEqual(['a', 'b']);
  });

  it('stops whatever it can when the record holds a cycle (no valid revision makes one) instead of hanging', () => {
    const state = desired([{ name: 'keep' }]);
    const act = actual(undefined, {
      add: [
        instance('p', { deps: [{ on: 'q' }] }),
        instance('q', { deps: [{ on: 'p' }] }),
        instance('r', { deps: [{ on: 'p' }] }),
      ],
    });
    const r = diff(state, act);
    expect(r.stopOrder[0]).toBe('r');
    expect([...r.stopOrder].sort()).toEqual(['p', 'q', 'r']);
  });
});
