/**
 * No import circles between the engine's files (conventions §1): the two
 * evaluators share engine/check/rules.ts rather than importing each other,
 * and engine/check/ never imports the entry point. Every relative import
 * counts, type-only ones included.
 */
import test from 'ava';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { REPO_ROOT } from '../helpers/shared.ts';

const ENGINE = join(REPO_ROOT, 'engine');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : []));
}

/** Relative import and re-export targets of a file, comments removed. */
function imports(file: string): string[] {
  const text = readFileSync(file, 'utf8').replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
  return [...text.matchAll(/^\s*(?:import|export)\b[^'";]*?\bfrom\s*['"](\.[^'"]+)['"]/gm)].map((m) => normalize(join(dirname(file), m[1]!)));
}

/** The circles of a graph: its strongly connected components of more than one file (or a file importing itself). */
function circles(graph: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const on = new Set<string>();
  const out: string[][] = [];
  let next = 0;
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    on.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        on.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || (graph.get(v) ?? []).includes(v)) out.push(component.map((f) => relative(REPO_ROOT, f)).sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return out;
}

test('no import circles between the files of engine/', (t) => {
  const graph = new Map(sources(ENGINE).map((f) => [f, imports(f)]));
  t.true(graph.size > 40);
  t.deepEqual(circles(graph), []);
});

test('the evaluators import the rule table, not each other; engine/check/ never imports the entry point', (t) => {
  const check = join(ENGINE, 'check');
  const of = (name: string): string[] => imports(join(check, name)).map((f) => relative(check, f));
  for (const evaluator of ['resolve_sync.ts', 'resolve_async.ts']) {
    t.true(of(evaluator).includes('rules.ts'), evaluator);
    t.false(of(evaluator).some((f) => f === 'resolve_sync.ts' || f === 'resolve_async.ts' || f === 'local_checker.ts'), evaluator);
  }
  for (const file of sources(check)) t.false(imports(file).includes(join(ENGINE, 'index.ts')), relative(REPO_ROOT, file));
});

test('the circle finder sees a circle (self-test)', (t) => {
  t.deepEqual(circles(new Map([['/a', ['/b']], ['/b', ['/c']], ['/c', ['/a']], ['/d', ['/a']]])).map((c) => c.length), [3]);
});
