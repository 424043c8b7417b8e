/**
 * Meta test: every row of the security and failure matrix (A1–A7, B1–B8,
 * C1–C6, D1–D5, E1–E3, F1–F6, G1–G4: 39 rows) has a line in the table of
 * docs/security.md naming at least one test, as `` `test/…test.ts` › `title
 * fragment` ``; every named file exists and contains the fragment; a row
 * marked `part` says what of it is not tested, and only the rows listed in
 * {@link TESTED_IN_PART} may be marked so: a row that became fully tested
 * cannot slip back unnoticed.
 */
import test from 'ava';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT, SHARED_DIR } from './helpers/shared.ts';
import { needs } from './helpers/needs.ts';

/** Rows per section of the matrix ("Total: 39 scenarios (A7, B8, C6, D5, E3, F6, G4)"). */
const SECTIONS: Readonly<Record<string, number>> = { A: 7, B: 8, C: 6, D: 5, E: 3, F: 6, G: 4 };
const ROWS = Object.entries(SECTIONS).flatMap(([letter, n]) => Array.from({ length: n }, (_, i) => `${letter}${i + 1}`));

/** The rows tested only in part, with why (none: every row is tested as the matrix states it). */
const TESTED_IN_PART: ReadonlySet<string> = new Set<string>();

interface Row {
  id: string;
  tests: { file: string; fragment: string }[];
  status: string;
}

function table(): Map<string, Row> {
  const text = readFileSync(join(REPO_ROOT, 'docs', 'security.md'), 'utf8');
  const rows = new Map<string, Row>();
  for (const line of text.split('\n')) {
    const m = /^\| ([A-G][1-9]) \| [^|]+ \| (.+) \| ([^|]+) \|$/.exec(line);
    if (!m) continue;
    const tests = [...m[2]!.matchAll(/`(test\/[^`]+\.test\.ts)` › `([^`]+)`/g)].map((t) => ({ file: t[1]!, fragment: t[2]! }));
    if (rows.has(m[1]!)) throw new Error(`row ${m[1]} appears twice in docs/security.md`);
    rows.set(m[1]!, { id: m[1]!, tests, status: m[3]!.trim() });
  }
  return rows;
}

needs(test, 'shared')('the rows are those of the matrix (../shared/reference/security-matrix.md, section 6)', (t) => {
  const matrix = readFileSync(join(SHARED_DIR, 'reference', 'security-matrix.md'), 'utf8');
  const ids = [...matrix.matchAll(/^\| ([A-G][1-9]) \|/gm)].map((m) => m[1]!);
  t.deepEqual(ids, ROWS);
});

test('docs/security.md lists every matrix row, and nothing else', (t) => {
  t.is(ROWS.length, 39);
  t.deepEqual([...table().keys()].sort(), [...ROWS].sort());
});

test('every matrix row names at least one test that exists', (t) => {
  const rows = table();
  const missing: string[] = [];
  for (const id of ROWS) {
    const row = rows.get(id);
    if (row === undefined || row.tests.length === 0) {
      missing.push(`${id}: no test named`);
      continue;
    }
    for (const { file, fragment } of row.tests) {
      const path = join(REPO_ROOT, file);
      if (!existsSync(path)) missing.push(`${id}: ${file} does not exist`);
      else if (!readFileSync(path, 'utf8').includes(fragment)) missing.push(`${id}: ${file} has no test "${fragment}"`);
    }
  }
  t.deepEqual(missing, []);
});

test('a row is tested, or tested in part with what is missing said', (t) => {
  for (const row of table().values()) {
    t.true(/^tested( \(.+\))?$/.test(row.status) || /^part: .{10,}/.test(row.status), `${row.id}: status "${row.status}"`);
  }
});

test('only the rows known to be tested in part are marked part', (t) => {
  const part = [...table().values()].filter((row) => row.status.startsWith('part')).map((row) => row.id);
  t.deepEqual(part, [...TESTED_IN_PART]);
});
