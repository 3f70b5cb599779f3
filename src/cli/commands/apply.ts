// `keystonectl apply PLAN`: verify and validate the plan here, hand it with its recipes to the local agent, and
// follow the apply to the end. The exit code is the outcome's, health included (applyExit, SPEC §9).
import { parseArgs } from 'node:util';
import { formatDuration, parseDuration } from '../../core/duration.js';
import { DirectoryReader } from '../../source/directory-reader.js';
import { loadRevision } from '../../load/load-revision.js';
import { AGENT_OPTIONS, AGENT_USAGE, agentClient, withAgentErrors } from '../agent-client.js';
import { collectApplyFiles } from '../apply-payload.js';
import { EXIT, UsageError, type CliIo } from '../io.js';
import { plainProgress, terminalProgress, type ProgressEvent } from '../render/apply-progress.js';
import { renderDiagnosticsText } from '../render/diagnostics-text.js';
import { planPathIn, repoRoot } from '../repository-args.js';
import { describeVerification, TRUST_OPTIONS, TRUST_USAGE, trustPolicy } from '../trust-args.js';

export const APPLY_USAGE = `keystonectl apply PLAN [--repo DIR] ${TRUST_USAGE} [--force] [--now] [--wait converged|none] [--timeout 10m] [--json] ${AGENT_USAGE}`;

type Json = Record<string, unknown>;

export async function apply(argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      repo: { type: 'string' },
      force: { type: 'boolean', default: false },
      now: { type: 'boolean', default: false },
      wait: { type: 'string', default: 'converged' },
      timeout: { type: 'string', default: '10m' },
      json: { type: 'boolean', default: false },
      ...TRUST_OPTIONS,
      ...AGENT_OPTIONS,
    },
  });
  if (positionals.length !== 1) throw new UsageError('apply takes exactly one PLAN');
  if (values.wait !== 'converged' && values.wait !== 'none')
    throw new UsageError(`--wait must be converged or none, not "${values.wait}"`);
  const timeoutMs = parseDuration(values.timeout);
  if (timeoutMs === undefined || timeoutMs <= 0)
    throw new UsageError(`--timeout takes a duration such as 10m, not "${values.timeout}"`);
  const root = repoRoot(io.cwd, values.repo);
  const plan = planPathIn(root, positionals[0]!);
  const policy = trustPolicy(values, io);

  // 1. Here first: a bad plan is reported with its file and line without bothering the device. The agent checks
  //    again with its own keys: this check is for the operator, not for the device's safety.
  const raw = new DirectoryReader(root);
  const head = await policy.open(raw);
  if (head.verification.unsigned)
    io.stderr.write(`keystonectl apply: WARNING: ${describeVerification(head.verification)}\n`);
  const desired = await loadRevision(head.reader, plan);
  if (!desired.ok) {
    if (values.json)
      io.stdout.write(
        JSON.stringify({ error: { code: 'KS_INVALID_REVISION', plan, diagnostics: desired.diagnostics } }, null, 2) +
          '\n',
      );
    else io.stderr.write(renderDiagnosticsText(plan, desired.diagnostics));
    return EXIT.BAD_INPUT;
  }
  const files = await collectApplyFiles(raw, plan, desired.state, head.verification);
  const body = {
    plan,
    files: Object.fromEntries([...files].map(([p, b]) => [p, Buffer.from(b).toString('base64')])),
    force: values.force,
    ...(values.now && { now: true }),
  };

  // 2. Handed over, then followed line by line until the agent says how it ended.
  const client = agentClient(values, io);
  return withAgentErrors('apply', io, values.json, async () => {
    const stream = client.postStream('/v1/apply', body, { query: { wait: values.wait }, timeoutMs });
    if (values.wait === 'none') {
      for await (const answer of stream) {
        if (values.json) io.stdout.write(JSON.stringify(answer, null, 2) + '\n');
        else
          io.stdout.write(
            `apply of ${plan} handed to the agent as ${String((answer as Json).revision)} (not waited for)\n`,
          );
      }
      return EXIT.OK;
    }
    const view = values.json
      ? undefined
      : io.stdout.isTTY
        ? terminalProgress((s) => io.stdout.write(s))
        : plainProgress((s) => io.stdout.write(s));
    const summary: Json = {};
    let done: Extract<ProgressEvent, { event: 'done' }> | undefined;
    try {
      for await (const line of stream) {
        const e = line as ProgressEvent;
        view?.update(e);
        if (e.event === 'accepted')
          Object.assign(summary, { revision: e.revision, planFile: e.planFile, suspendedSync: e.suspendedSync });
        if (e.event === 'reconcile')
          summary.reconcile = { stopOrder: e.stopOrder, startOrder: e.startOrder, noTouch: e.noTouch };
        if (e.event === 'done') done = e;
      }
    } catch (e) {
      if ((e as { code?: string }).code !== 'KS_AGENT_UNREACHABLE' || !summary.revision) throw e;
      io.stderr.write(
        `keystonectl apply: stopped following ${String(summary.revision)} after ${formatDuration(timeoutMs)}: it goes on in the agent (keystonectl status, keystonectl history)\n`,
      );
      return EXIT.FAILED;
    }
    if (!done) {
      io.stderr.write(
        'keystonectl apply: the agent ended the progress stream before the apply finished (it is shutting down?): see keystonectl history\n',
      );
      return EXIT.FAILED;
    }
    if (values.json) io.stdout.write(JSON.stringify({ ...summary, ...done, event: undefined }, null, 2) + '\n');
    return applyExit(done, values.json ? undefined : (s) => io.stderr.write(s));
  });
}

/**
 * The exit code of a finished apply: its outcome, health included (SPEC §5, §9). `success` is 0 when every component
 * runs, or is stopped (held by an operator: `keystonectl stop`, the one thing a success may leave not running); a
 * component that is not healthy makes it 1 even then, so that the exit code never says more than the device does.
 * `failure` (and an apply superseded before it ran) is 1; a revision the agent refused (invalid, unsigned, untrusted,
 * replayed) is bad input, 2, as everywhere.
 */
export function applyExit(
  done: Pick<Extract<ProgressEvent, { event: 'done' }>, 'outcome' | 'summary' | 'converged' | 'components'>,
  warn?: (s: string) => void,
): number {
  if (done.outcome === 'success') {
    if (done.converged) return EXIT.OK;
    const down = done.components.filter((c) => c.state !== 'running' && c.state !== 'stopped');
    const held = done.components.filter((c) => c.state === 'stopped');
    if (down.length === 0) {
      if (held.length)
        warn?.(
          `keystonectl apply: success; held stopped: ${held.map((c) => c.name).join(', ')} (keystonectl start NAME runs it again)\n`,
        );
      return EXIT.OK;
    }
    warn?.(
      `keystonectl apply: the agent reported success, but not every component is healthy: ${down.map((c) => `${c.name} (${c.state}${c.reason ? `: ${c.reason}` : ''})`).join(', ')}\n`,
    );
    return EXIT.FAILED;
  }
  warn?.(`keystonectl apply: ${done.outcome}: ${done.summary}\n`);
  return done.outcome === 'rejected' ? EXIT.BAD_INPUT : EXIT.FAILED;
}
