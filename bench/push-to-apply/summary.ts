// The push-to-apply bench's figures: per mode the p50 / p95 / mean of each measure, the stages, the references and aims.
import { mean, median, quantile, round } from '../lib/stats.js';

/** One push: when it returned, then the agent's lines for it, ms from the push. */
export interface Sample {
  mode: string;
  sha: string;
  component: string;
  pushMs: number;
  pushedAt: number;
  hookSentAt?: number;
  hookAckAt?: number;
  startMs?: number;
  doneMs?: number;
  outcome?: string;
  stopOrder?: string[];
  startOrder?: string[];
  newRevisionMs?: number | undefined;
  hookLoggedMs?: number | undefined;
  hookSentMs?: number;
  hookAckMs?: number;
  nativeFetchMs?: number;
}

export interface ModeRun {
  poll: string;
  samples: Sample[];
  warnings: string[];
}

type Stat = ReturnType<typeof stat>;
export interface ModeSummary {
  poll: string;
  pushes: number;
  startMs: Stat;
  doneMs: Stat;
  pushMs: Stat;
  newRevisionMs: Stat;
  stagesMs: Partial<
    Record<
      | 'pushToHookSent'
      | 'hookSentToLogged'
      | 'hookLoggedToAck'
      | 'look'
      | 'waitAndLook'
      | 'verifyLoadDiff'
      | 'restartOne',
      number | null
    >
  >;
  nativeFetchMs?: Stat;
  outcomes: (string | undefined)[];
  restartedOnlyTheBumped: boolean;
}

const stat = (xs: (number | undefined)[]) => {
  const v = xs.filter((x): x is number => Number.isFinite(x));
  return {
    p50: round(median(v)),
    p95: round(quantile(v, 0.95)),
    mean: round(mean(v)),
    min: round(Math.min(...v)),
    max: round(Math.max(...v)),
  };
};

export function summarise(byMode: Record<string, ModeRun>, pollMs: number) {
  const summary: Record<string, ModeSummary> = {};
  for (const [mode, m] of Object.entries(byMode)) {
    const s = m.samples;
    summary[mode] = {
      poll: m.poll,
      pushes: s.length,
      startMs: stat(s.map((x) => x.startMs)),
      doneMs: stat(s.map((x) => x.doneMs)),
      pushMs: stat(s.map((x) => x.pushMs)),
      newRevisionMs: stat(s.map((x) => x.newRevisionMs)),
      // The stages, median of each sample's own segment.
      stagesMs: {
        ...(mode === 'webhook' && {
          pushToHookSent: round(median(s.map((x) => x.hookSentMs!))),
          hookSentToLogged: round(median(s.map((x) => x.hookLoggedMs! - x.hookSentMs!))),
          hookLoggedToAck: round(median(s.map((x) => x.hookAckMs! - x.hookLoggedMs!))),
          look: round(median(s.map((x) => x.newRevisionMs! - x.hookLoggedMs!))),
        }),
        ...(mode === 'polling' && { waitAndLook: round(median(s.map((x) => x.newRevisionMs!))) }),
        verifyLoadDiff: round(median(s.map((x) => x.startMs! - x.newRevisionMs!))),
        restartOne: round(median(s.map((x) => x.doneMs! - x.startMs!))),
      },
      ...(mode === 'webhook' && { nativeFetchMs: stat(s.map((x) => x.nativeFetchMs)) }),
      outcomes: [...new Set(s.map((x) => x.outcome))],
      restartedOnlyTheBumped: s.every(
        (x) =>
          [...x.stopOrder!, ...x.startOrder!].every((c) => c === x.component) && x.startOrder!.includes(x.component),
      ),
    };
  }
  const W = summary.webhook;
  const P = summary.polling;
  const references = {
    ...(W && {
      nativeFetchP50Ms: W.nativeFetchMs!.p50,
      webhookStartP50OverNativeFetch: round(W.startMs.p50! / W.nativeFetchMs!.p50!, 2),
    }),
    ...(P && {
      pollExpectedMeanWaitMs: pollMs / 2,
      pollingStartMeanOverHalfPoll: round(P.startMs.mean! / (pollMs / 2), 2),
      pollingStartP50OverHalfPoll: round(P.startMs.p50! / (pollMs / 2), 2),
    }),
  };
  const aims = W ? { webhookStartUnder1s: { p50: W.startMs.p50! < 1000, p95: W.startMs.p95! < 1000 } } : {};
  return { summary, references, aims };
}
