// The repository of the git-sync bench: 100 recipes and a plan, as a `git fast-import` stream of N commits.
import { Buffer } from 'node:buffer';

/** Recipe `i` at revision `version`. */
export function recipe(i: number, version: number): string {
  return [
    `# Benchmark recipe ${i}, revision ${version}.`,
    '[metadata]',
    `name = "com.bench.r${i}"`,
    `version = "1.0.${version}"`,
    '',
    '[lifecycle.run.exec]',
    'command = "./run"',
    `args = ["--port", "${20000 + i}", "--revision", "${version}"]`,
    '',
    '[lifecycle.run.health]',
    `check = "tcp://127.0.0.1:${20000 + i}"`,
    'interval = "5s"',
    '',
  ].join('\n');
}

/** A fast-import stream: the first commit writes 100 recipes and a plan, each next one changes one recipe. */
export function fastImportScript(n: number): string {
  const out: string[] = [];
  const blob = (path: string, text: string) => `M 100644 inline ${path}\ndata ${Buffer.byteLength(text)}\n${text}\n`;
  const t0 = 1_700_000_000;
  for (let c = 1; c <= n; c++) {
    const msg = `commit ${c}\n`;
    out.push(
      `commit refs/heads/main\nmark :${c}\ncommitter Bench <bench@keystone.invalid> ${t0 + c * 60} +0000\ndata ${Buffer.byteLength(msg)}\n${msg}`,
    );
    if (c > 1) out.push(`from :${c - 1}\n`);
    if (c === 1) {
      const plan = Array.from(
        { length: 100 },
        (_, i) => `[[components]]\nname = "r${i}"\nrecipe = "recipes/r-${String(i).padStart(3, '0')}.toml"\n`,
      ).join('\n');
      out.push(blob('plans/plan.toml', plan));
      for (let i = 0; i < 100; i++) out.push(blob(`recipes/r-${String(i).padStart(3, '0')}.toml`, recipe(i, 1)));
    } else out.push(blob(`recipes/r-${String(c % 100).padStart(3, '0')}.toml`, recipe(c % 100, c)));
    out.push('\n');
  }
  return out.join('');
}
