/**
 * The benchmark runner: `npm run bench [-- --quick] [-- --suite NAME[,NAME]]`.
 * Runs the selected suites, prints one table per suite and writes bench/results.json.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import {
  CHILD_FLAG,
  load,
  type Measure,
  machine,
  ratio,
  runChild,
  type Suite,
  type SuiteResult,
} from './harness.ts';

/** Each suite is one file under bench/ exporting `suite`; add a line here to register one. */
const SUITES: Record<string, () => Promise<{ suite: Suite }>> = {
  decode: () => import('./decode.ts'),
  receive: () => import('./receive.ts'),
  deliver: () => import('./deliver.ts'),
  package: () => import('./package.ts'),
};

const RESULTS = new URL('./results.json', import.meta.url);

async function main(argv: string[]): Promise<void> {
  if (argv[0] === CHILD_FLAG) return runAsChild(argv.slice(1));
  const { values } = parseArgs({
    args: argv,
    options: {
      quick: { type: 'boolean', default: false },
      markdown: { type: 'boolean', default: false },
      render: { type: 'string' },
      suite: { type: 'string', multiple: true },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(
      `usage: npm run bench -- [--quick] [--suite ${Object.keys(SUITES).join('|')}]…\n` +
        '  --quick   smaller bodies and fewer runs (well under 2 minutes)\n' +
        '  --suite   run only these suites (repeatable, or comma-separated); default: all\n' +
        '  --markdown  also print each table as Markdown (for docs/benchmarks.md)\n' +
        '  --render FILE  print a saved results.json as Markdown tables and targets; runs nothing\n',
    );
    return;
  }
  if (values.render !== undefined) return renderSaved(values.render);
  const names = (values.suite ?? Object.keys(SUITES)).flatMap((s) => s.split(',')).filter(Boolean);
  for (const name of names) {
    if (!SUITES[name]) throw new Error(`unknown suite ${name}; known: ${Object.keys(SUITES).join(', ')}`);
  }
  const quick = values.quick ?? false;
  const host = machine();
  const started = performance.now();
  const date = new Date().toISOString();
  print(`mediahook benchmarks${quick ? ' (--quick)' : ''}, ${date}`);
  print(`Node ${host.node} on ${host.platform}; CPU ${host.cpu}, ${host.cores} cores`);
  const loadAtStart = load();
  print(
    `load average (1 min) at start: ${loadAtStart}${loadAtStart > 0.5 ? ' (busy: figures will be noisy)' : ''}`,
  );

  const suites: { name: string; description: string; result: SuiteResult; seconds: number }[] = [];
  for (const name of names) {
    const { suite } = await SUITES[name]!();
    const suiteStart = performance.now();
    print(`\n== ${suite.name}: ${suite.description}`);
    const result = await suite.run({
      quick,
      log: (line) => print(`  … ${line}`),
      child: (args) => runChild(suite.name, args),
    });
    const took = (performance.now() - suiteStart) / 1000;
    suites.push({ name: suite.name, description: suite.description, result, seconds: took });
    print('');
    print(renderTable(result));
    print(renderRatios(result));
    for (const check of result.checks) {
      print(`target: ${check.label}: ${check.value} ${verdictOf(check)}`);
    }
    for (const note of result.notes) print(`note: ${note}`);
    print(`(${suite.name} took ${took.toFixed(0)} s)`);
    if (values.markdown) print(`\n${renderMarkdown(result)}`);
  }

  const total = (performance.now() - started) / 1000;
  const loadAtEnd = load();
  const report = {
    date,
    quick,
    machine: host,
    load: { start: loadAtStart, end: loadAtEnd },
    seconds: Math.round(total),
    suites: suites.map(({ name, description, result, seconds }) => ({
      name,
      description,
      seconds: Math.round(seconds),
      contenders: result.contenders,
      measures: result.measures.map((m) => ({
        id: m.id,
        label: m.label,
        unit: m.unit,
        better: m.better,
        floor: m.floor ?? null,
        ours: m.ours,
        peers: Object.fromEntries(
          Object.entries(m.peers).map(([peer, value]) => [
            peer,
            { value, ratio: ratio(m.ours, value, m.floor) },
          ]),
        ),
        runs: m.runs,
      })),
      checks: result.checks,
      notes: result.notes,
    })),
  };
  await writeFile(RESULTS, `${JSON.stringify(report, null, 2)}\n`);
  print(`\nload average (1 min) at end: ${loadAtEnd}`);
  print(`wrote bench/results.json; total ${total.toFixed(0)} s`);
}

/** A target's verdict as the tables print it. */
function verdictOf(check: { pass: boolean | null }): 'N/A' | 'PASS' | 'BELOW' {
  return check.pass === null ? 'N/A' : check.pass ? 'PASS' : 'BELOW';
}

/** The Markdown tables and targets of a run saved by this runner, for the docs after the fact. */
async function renderSaved(path: string): Promise<void> {
  const saved = JSON.parse(await readFile(path, 'utf8')) as {
    date: string;
    seconds: number;
    suites: (Omit<SuiteResult, 'measures'> & {
      name: string;
      measures: (Omit<Measure, 'peers'> & { peers: Record<string, { value: number | null }> })[];
    })[];
  };
  print(`results of ${saved.date} (${saved.seconds} s)`);
  for (const suite of saved.suites) {
    const measures = suite.measures.map((m) => ({
      ...m,
      floor: m.floor ?? undefined,
      peers: Object.fromEntries(Object.entries(m.peers).map(([peer, { value }]) => [peer, value])),
    }));
    print(`\n**${suite.name}**\n\n${renderMarkdown({ ...suite, measures })}\n`);
    for (const check of suite.checks) {
      const verdict = verdictOf(check);
      print(
        `| ${suite.name}: ${check.label} | ${check.value} ${verdict === 'BELOW' ? '**BELOW**' : verdict} |`,
      );
    }
  }
}

/** Inside a child process: run the suite's child entry and print its result as one JSON line. */
async function runAsChild(args: string[]): Promise<void> {
  const [name, ...rest] = args;
  const load = name === undefined ? undefined : SUITES[name];
  if (!load) throw new Error(`unknown suite ${name}`);
  const { suite } = await load();
  if (!suite.child) throw new Error(`suite ${name} has no child entry`);
  const result = await suite.child(rest);
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

function print(line: string): void {
  process.stdout.write(`${line}\n`);
}

/** A figure with about three significant digits. */
function fmt(value: number | null): string {
  if (value === null) return '—';
  if (value >= 100) return value.toFixed(0);
  if (value >= 10) return value.toFixed(1);
  return value.toFixed(2);
}

function fmtRatio(value: number | null): string {
  return value === null ? '—' : `${value.toFixed(2)}×`;
}

function peersOf(result: SuiteResult): string[] {
  return result.contenders.slice(1);
}

/** Rows: measures; columns: each contender's figure, then ours/peer for each peer. */
export function renderTable(result: SuiteResult): string {
  const peers = peersOf(result);
  const header = [
    'measure',
    'unit',
    result.contenders[0] ?? 'ours',
    ...peers,
    ...peers.map((p) => `ours/${p}`),
  ];
  const rows = result.measures.map((m: Measure) => [
    m.label,
    `${m.unit} ${m.better === 'higher' ? '↑' : '↓'}`,
    fmt(m.ours),
    ...peers.map((p) => fmt(m.peers[p] ?? null)),
    ...peers.map((p) => fmtRatio(ratio(m.ours, m.peers[p] ?? null, m.floor))),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    cells.map((cell, i) => (i < 2 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  ');
  return [
    line(header),
    widths.map((w) => '-'.repeat(w)).join('  '),
    ...rows.map(line),
    '↑ higher is better, ↓ lower is better; a ratio is ours divided by the peer',
  ].join('\n');
}

/** The same table in Markdown, with each ratio beside the peer's figure. */
function renderMarkdown(result: SuiteResult): string {
  const peers = peersOf(result);
  const head = ['measure', result.contenders[0] ?? 'ours', ...peers.map((p) => `${p} (ours/${p})`)];
  const rows = result.measures.map((m) => [
    `${m.label} (${m.unit}, ${m.better} is better)`,
    fmt(m.ours),
    ...peers.map((p) => {
      const value = m.peers[p] ?? null;
      const r = ratio(m.ours, value, m.floor);
      return value === null ? '—' : `${fmt(value)} (${fmtRatio(r)})`;
    }),
  ]);
  const line = (cells: string[]) => `| ${cells.join(' | ')} |`;
  return [line(head), line(head.map((_, i) => (i === 0 ? '---' : '---:'))), ...rows.map(line)].join('\n');
}

/** One line per measure in the form `ours/busboy 3.1×`. */
function renderRatios(result: SuiteResult): string {
  const peers = peersOf(result);
  return result.measures
    .map((m) => {
      const parts = peers.map((p) => `ours/${p} ${fmtRatio(ratio(m.ours, m.peers[p] ?? null, m.floor))}`);
      return `${m.label}: ${parts.join(', ')}`;
    })
    .join('\n');
}

main(process.argv.slice(2)).catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
