// What happens to the device between kills: Git pushes (a version bump, a revert, a composite change that fails its
// health and is rolled back, a sick gauge that fails its health and stays unhealthy, so that the device runs a
// revision that failed, a replayed old signature that must be refused), a component's crash (its process or
// container killed, so the supervisor restarts it) and an operator's restart through the API. Each returns at once
// (a push once it is on the server): the agent is then killed at a random moment of what the action set off.
import type { ChaosAgent } from './chaos-agent.js';
import { GAUGE as GAUGE_NAME, type ChaosRepo, type PushedCommit } from './chaos-repo.js';
import { killContainer } from './device-view.js';
import type { SeededRandom } from './seeded-random.js';

export type ActionKind =
  'bump' | 'revert' | 'composite-break' | 'sick' | 'replay' | 'crash' | 'operator-restart' | 'locked-bump' | 'idle';
export type PushKind = 'bump' | 'revert' | 'composite-break' | 'sick' | 'replay';

/** How often each comes up. Pushes dominate: they are what makes the agent stop, install, start and report. */
export const ACTION_WEIGHTS: Readonly<Record<ActionKind, number>> = {
  bump: 30,
  revert: 10,
  'composite-break': 8,
  // A failed revision left running: the restarts after it (the next actions are often not pushes) must keep it failed.
  sick: 10,
  replay: 6,
  crash: 16,
  'operator-restart': 12,
  // SPEC §19: gauge holds its update lock, then a bump of gauge comes; released once the kills are over (run-chaos.ts).
  'locked-bump': 6,
  idle: 6,
};

/** The longest random delay before the kill, per action (ms): about as long as what the action sets off takes. */
export const KILL_WITHIN_MS: Readonly<Record<ActionKind, number>> = {
  bump: 2_500,
  revert: 2_500,
  'composite-break': 3_500,
  // gauge's stop and start, then its 2 s start budget.
  sick: 3_500,
  replay: 1_000,
  crash: 1_500,
  'operator-restart': 1_500,
  'locked-bump': 2_500,
  idle: 300,
};

export interface ActionDone {
  kind: ActionKind;
  what: string;
  pushed?: PushedCommit;
}

/** A push of the given kind (the actions that push, also used while the agent is down). */
export async function push(kind: PushKind, repo: ChaosRepo, rng: SeededRandom, only?: string): Promise<ActionDone> {
  let pushed: PushedCommit;
  let what: string = kind;
  if (kind === 'bump') {
    const name = only ?? rng.pick([...repo.fx.components.map((c) => c.name), 'app']);
    pushed = await repo.pushBump(name);
    what = `bump ${name}`;
  } else if (kind === 'revert') pushed = await repo.pushRevert();
  else if (kind === 'composite-break') pushed = await repo.pushCompositeBreak();
  else if (kind === 'sick') pushed = await repo.pushSick();
  else pushed = await repo.pushReplay();
  return { kind, what: `${what} ${pushed.id.slice(0, 7)}`, pushed };
}

export async function act(kind: ActionKind, repo: ChaosRepo, ca: ChaosAgent, rng: SeededRandom): Promise<ActionDone> {
  switch (kind) {
    case 'bump':
    case 'revert':
    case 'composite-break':
    case 'sick':
    case 'replay': {
      const done = await push(kind, repo, rng);
      // The poll would look within a second; the nudge makes the apply start now (not awaited past its answer).
      await ca.nudge();
      return done;
    }
    case 'crash': {
      const records = ca.h.components().filter((c) => c.instance !== undefined && c.state === 'running');
      if (!records.length) return { kind, what: 'crash: nothing running' };
      const c = rng.pick(records);
      const inst = c.instance!;
      try {
        if (inst.kind === 'process') process.kill(inst.pid, 'SIGKILL');
        else await killContainer(inst.id);
      } catch {
        /* gone already */
      }
      return { kind, what: `crash of ${c.name}` };
    }
    case 'operator-restart': {
      const name = rng.pick([...repo.fx.components.map((c) => c.name), 'app']);
      // Not awaited: the kill is meant to land while the restart is under way (the request then fails; fine).
      void ca.api('POST', `/v1/components/${encodeURIComponent(name)}:restart`, 60_000);
      return { kind, what: `operator restart of ${name}` };
    }
    case 'locked-bump': {
      // The lock held by someone (a job of gauge's, an operator's shell) before the push: the revision must wait.
      await ca.holdGaugeLock();
      const done = await push('bump', repo, rng, GAUGE_NAME);
      await ca.nudge();
      return { kind, what: `locked: ${done.what}`, ...(done.pushed && { pushed: done.pushed }) };
    }
    case 'idle':
      return { kind, what: 'idle' };
  }
}
