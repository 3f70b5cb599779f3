import { describe, expect, it } from 'vitest';
import { hardDependents, restartCascade } from '../../src/core/restart-cascade.js';
import { desired as build } from '../support/state-builder.js';

describe('the restart cascade of one component', () => {
  it.each([
    ['influxdb', { stopOrder: ['web', 'api', 'influxdb'], startOrder: ['influxdb', 'api', 'web'] }],
    ['api', { stopOrder: ['web', 'api'], startOrder: ['api', 'web'] }],
    ['telemetry', { stopOrder: ['telemetry'], startOrder: ['telemetry'] }],
    ['web', { stopOrder: ['web'], startOrder: ['web'] }],
  ])('%s (the worked example: telemetry is ordering, so never in a cascade)', (name, orders) => {
    expect(restartCascade(build(STACK), name)).toEqual(orders);
  });

  it('follows chains of hard edges only', () => {
    const s = build([
      { name: 'a', id: 'com.t.a', version: '1.0.0', deps: [] },
      { name: 'b', id: 'com.t.b', version: '1.0.0', deps: [{ on: 'a', type: 'hard' }] },
      { name: 'c', id: 'com.t.c', version: '1.0.0', deps: [{ on: 'b', type: 'ordering' }] },
      { name: 'd', id: 'com.t.d', version: '1.0.0', deps: [{ on: 'c', type: 'hard' }] },
      { name: 'e', id: 'com.t.e', version: '1.0.0', deps: [{ on: 'b', type: 'hard' }] },
    ]);
    expect(hardDependents(s, 'a')).toEqual(['b', 'e']);
    expect(hardDependents(s, 'c')).toEqual(['d']);
  });
});

const STACK = [
  { name: 'influxdb', id: 'com.acme.influxdb', version: '2.7.5', deps: [] },
  { name: 'api', id: 'com.acme.api', version: '1.4.0', deps: [{ on: 'influxdb', type: 'hard' as const }] },
  {
    name: 'telemetry',
    id: 'com.acme.telemetry',
    version: '1.29.0',
    deps: [{ on: 'influxdb', type: 'ordering' as const }],
  },
  { name: 'web', id: 'com.acme.web', version: '1.27.0', deps: [{ on: 'api', type: 'hard' as const }] },
];
