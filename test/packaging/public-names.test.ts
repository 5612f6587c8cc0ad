/**
 * What each entry of each package exports, values and types, read by the TypeScript compiler
 * from the sources the entries are built from, against the lists of exported names in the
 * package's docs: every name is documented under its entry, and a name that is no longer
 * exported is no longer documented. The surface stays small: `mediahook`'s root entry at most
 * 40 names, `@mediahook/server` at most 60 over all its entries.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { entryPoints } from '../../scripts/entry-points.js';
import { ROOT } from './packed.ts';

const ENTRIES = entryPoints();
const SPECIFIERS = new Set(ENTRIES.map((entry) => entry.specifier));

/** Each entry's exported names, sorted, as a consumer of its module sees them. */
function exportedNames(): Map<string, string[]> {
  const tsconfig = join(ROOT, 'tsconfig.json');
  const { config } = ts.readConfigFile(tsconfig, ts.sys.readFile) as { config: unknown };
  const { options } = ts.parseJsonConfigFileContent(config, ts.sys, ROOT, undefined, tsconfig);
  const sources = ENTRIES.map((entry) => join(ROOT, entry.dir, entry.source));
  const program = ts.createProgram(sources, options);
  const checker = program.getTypeChecker();
  return new Map(
    ENTRIES.map((entry, i) => {
      const module = checker.getSymbolAtLocation(program.getSourceFile(sources[i]!)!)!;
      return [
        entry.specifier,
        checker
          .getExportsOfModule(module)
          .map((symbol) => symbol.name)
          .sort(),
      ];
    }),
  );
}

/**
 * The lists of each package's docs, by entry: under a heading that is the entry's specifier in
 * backticks, each list item's text (continuation lines included).
 */
function documentedLists(dir: string): Map<string, string[][]> {
  const docs = join(ROOT, dir, 'docs');
  const lists = new Map<string, string[][]>();
  for (const page of readdirSync(docs).filter((name) => name.endsWith('.md'))) {
    let items: string[] | undefined;
    for (const line of readFileSync(join(docs, page), 'utf8').split('\n')) {
      if (/^#+ /.test(line)) {
        const named = /^#+ `([^`]+)`$/.exec(line)?.[1];
        items = named !== undefined && SPECIFIERS.has(named) ? [] : undefined;
        if (items) lists.set(named!, [...(lists.get(named!) ?? []), items]);
      } else if (items && line.startsWith('- ')) items.push(line);
      else if (items && items.length > 0 && line.startsWith('  '))
        items.push(`${items.pop()} ${line.trim()}`);
    }
  }
  return lists;
}

/** The names in backticks in a text: `createReceiver(options)` names createReceiver. */
const namesIn = (text: string) => [...text.matchAll(/`([A-Za-z_$][\w$]*)/g)].map((match) => match[1]!);

const exported = exportedNames();

describe.each(ENTRIES.map((entry) => [entry.specifier, entry] as const))('%s', (specifier, entry) => {
  it('is documented in one list of its package’s docs, every name of it', () => {
    const lists = documentedLists(entry.dir).get(specifier) ?? [];
    expect(lists, `one list under "\`${specifier}\`" in ${entry.dir}/docs`).toHaveLength(1);
    const items = lists[0]!;
    const names = exported.get(specifier)!;
    const mentioned = new Set(items.flatMap(namesIn));
    expect(
      names.filter((name) => !mentioned.has(name)),
      'exported but not documented',
    ).toEqual([]);
    // Each item starts with the name it documents: one that is gone is a stale item.
    const leading = items.map((item) => namesIn(item)[0]);
    expect(
      leading.filter((name) => name === undefined || !names.includes(name)),
      'documented, not exported',
    ).toEqual([]);
  });

  it('has its own types condition, first, beside its JavaScript', () => {
    const { exports } = JSON.parse(readFileSync(join(ROOT, entry.dir, 'package.json'), 'utf8')) as {
      exports: Record<string, Record<string, string>>;
    };
    const target = exports[entry.subpath]!;
    expect(Object.keys(target)[0]).toBe('types');
    expect(target['types']).toBe(target['default']!.replace(/\.js$/, '.d.ts'));
  });
});

describe('the public surface', () => {
  const count = (packageName: string) =>
    ENTRIES.filter((entry) => entry.packageName === packageName).reduce(
      (total, entry) => total + exported.get(entry.specifier)!.length,
      0,
    );

  it('keeps mediahook’s root entry to at most 40 names', () => {
    expect(exported.get('mediahook')!.length).toBeLessThanOrEqual(40);
  });

  it('keeps @mediahook/server to at most 60 names over all its entries', () => {
    expect(count('@mediahook/server')).toBeLessThanOrEqual(60);
  });
});
