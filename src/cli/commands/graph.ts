// `keystonectl graph [PLAN]`: the resolved layers, orders and edges.
import { parseArgs } from 'node:util';
import { DirectoryReader } from '../../source/directory-reader.js';
import { loadRevision } from '../../load/load-revision.js';
import { EXIT, UsageError, type CliIo } from '../io.js';
import { renderDiagnosticsText } from '../render/diagnostics-text.js';
import { GRAPH_FORMATS, renderGraph, type GraphFormat } from '../render/graph-formats.js';
import { defaultPlan, planPathIn, repoRoot } from '../repository-args.js';
import { describeVerification, TRUST_OPTIONS, TRUST_USAGE, trustPolicy } from '../trust-args.js';

export const GRAPH_USAGE = `keystonectl graph [PLAN] [--repo DIR] ${TRUST_USAGE} [--format text|json|mermaid|dot] [--json]`;

export async function graph(argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      repo: { type: 'string' },
      format: { type: 'string', default: 'text' },
      json: { type: 'boolean', default: false },
      ...TRUST_OPTIONS,
    },
  });
  if (positionals.length > 1) throw new UsageError('graph takes at most one PLAN');
  const format = (values.json ? 'json' : values.format) as GraphFormat;
  if (!GRAPH_FORMATS.includes(format))
    throw new UsageError(`--format must be one of ${GRAPH_FORMATS.join(', ')}, not "${values.format}"`);
  const root = repoRoot(io.cwd, values.repo);
  const plan = positionals[0] !== undefined ? planPathIn(root, positionals[0]) : defaultPlan(root);
  const opened = await trustPolicy(values, io).open(new DirectoryReader(root));
  if (opened.verification.unsigned)
    io.stderr.write(`keystonectl graph: WARNING: ${describeVerification(opened.verification)}\n`);
  const loaded = await loadRevision(opened.reader, plan);
  if (!loaded.ok) {
    if (format === 'json')
      io.stdout.write(
        JSON.stringify({ error: { code: 'KS_INVALID_REVISION', plan, diagnostics: loaded.diagnostics } }, null, 2) +
          '\n',
      );
    else io.stderr.write(renderDiagnosticsText(plan, loaded.diagnostics));
    return EXIT.BAD_INPUT;
  }
  io.stdout.write(renderGraph(loaded.state, format));
  return EXIT.OK;
}
