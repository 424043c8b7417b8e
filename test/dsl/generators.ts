/**
 * Test helper: fast-check generators of DSL texts (valid-looking models with
 * random formatting) and of broken texts (mutations of those).
 */
import fc from 'fast-check';

type Gen = fc.GeneratorValue;

const TYPE_NAMES = ['user', 'group', 'folder', 'doc', 'org/team', 'a.b', 'model', 'relation', 'x-y'];
const REL_NAMES = ['viewer', 'editor', 'owner', 'parent', 'member', 'can_read', 'r-1', 'type', 'schema'];
const COND_NAMES = ['c1', 'inside', 'x_less'];
const PARAM_TYPES = ['int', 'uint', 'string', 'bool', 'double', 'duration', 'timestamp', 'ipaddress', 'map<int>', 'list<string>'];
const EXPRESSIONS = [
  'x < 10',
  'x <= 10 && y != "a}b"',
  "ip.in_cidr('10.0.0.0/8')",
  '"k" in m',
  'x == 1 // trailing CEL comment',
  'ts < timestamp("2024-01-01T00:00:00Z") || d > duration("1h")',
  'l.exists(v, v == "a")',
  '1u < 2u && 1.5 > 0.5',
];

function pick<T>(g: Gen, items: readonly T[]): T {
  return items[g(fc.integer, { min: 0, max: items.length - 1 })] as T;
}

function chance(g: Gen, percent: number): boolean {
  return g(fc.integer, { min: 0, max: 99 }) < percent;
}

function subset<T>(g: Gen, items: readonly T[], min: number, max: number): T[] {
  const n = g(fc.integer, { min, max: Math.min(max, items.length) });
  const pool = [...items];
  const out: T[] = [];
  for (let i = 0; i < n; i++) out.push(pool.splice(g(fc.integer, { min: 0, max: pool.length - 1 }), 1)[0] as T);
  return out;
}

type Ctx = { types: string[]; rels: string[]; conds: string[]; safe?: boolean; used?: Set<string>; pool?: string[] };

function rewrite(g: Gen, ctx: Ctx): string {
  if (ctx.safe) {
    // Distinct operands per definition, so safe models rarely trip the duplicate rules.
    if (ctx.pool && ctx.pool.length > 0) return ctx.pool.splice(g(fc.integer, { min: 0, max: ctx.pool.length - 1 }), 1)[0] as string;
    return pick(g, ctx.rels);
  }
  const name = chance(g, 85) ? pick(g, ctx.rels) : pick(g, REL_NAMES);
  if (chance(g, 25)) return `${name} from ${chance(g, 85) ? pick(g, ctx.rels) : pick(g, REL_NAMES)}`;
  return name;
}

function restriction(g: Gen, ctx: Ctx): string {
  if (ctx.safe) {
    let v = pick(g, ctx.types);
    if (chance(g, 15)) v += ':*';
    if (ctx.conds.length > 0 && chance(g, 30)) {
      const c = pick(g, ctx.conds);
      ctx.used?.add(c);
      v += ` with ${c}`;
    }
    return v;
  }
  let s = chance(g, 90) ? pick(g, ctx.types) : 'ghost';
  const kind = g(fc.integer, { min: 0, max: 9 });
  if (kind === 0) s += ':*';
  else if (kind === 1) s += `#${pick(g, REL_NAMES)}`;
  if (ctx.conds.length > 0 && chance(g, 20)) s += ` with ${pick(g, ctx.conds)}`;
  else if (chance(g, 2)) s += ' with ghost_cond';
  return s;
}

function direct(g: Gen, ctx: Ctx): string {
  const n = g(fc.integer, { min: 1, max: 3 });
  let items = Array.from({ length: n }, () => restriction(g, ctx));
  if (ctx.safe) items = [...new Set(items)];
  return `[${items.join(chance(g, 80) ? ', ' : ',')}]`;
}

function operandNoDirect(g: Gen, ctx: Ctx, depth: number): string {
  if (depth > 0 && chance(g, 20)) return `(${defNoDirect(g, ctx, depth - 1)})`;
  return rewrite(g, ctx);
}

function partials(g: Gen, ctx: Ctx, depth: number): string {
  const op = pick(g, ['or', 'and', 'but not', 'none', 'none']);
  if (op === 'none') return '';
  const count = op === 'but not' ? 1 : g(fc.integer, { min: 1, max: 3 });
  let s = '';
  for (let i = 0; i < count; i++) s += ` ${op} ${operandNoDirect(g, ctx, depth)}`;
  return s;
}

function defNoDirect(g: Gen, ctx: Ctx, depth: number): string {
  return operandNoDirect(g, ctx, depth) + partials(g, ctx, depth);
}

function definition(g: Gen, ctx: Ctx, depth: number): string {
  let first: string;
  if (ctx.safe && ctx.rels.length === 0) return direct(g, ctx);
  const k = g(fc.integer, { min: 0, max: 9 });
  if (k < 5) first = direct(g, ctx);
  else if (k < 6 && depth > 0) first = `(${definition(g, ctx, depth - 1)})`;
  else first = rewrite(g, ctx);
  return first + partials(g, ctx, depth);
}

/**
 * A DSL text: in "safe" mode (half the time) a model built to be valid
 * (references only to earlier relations, used conditions only); otherwise
 * one that is often invalid.
 */
export function genModelText(g: Gen): string {
  const safe = chance(g, 50);
  const types = subset(g, TYPE_NAMES, 1, 5);
  const allConds = subset(g, COND_NAMES, 0, 2);
  const used = new Set<string>();
  const indent = pick(g, ['  ', '    ', '\t', '']);
  const blank = (): string => (chance(g, 30) ? '\n' : '') + (chance(g, 10) ? `\n${indent}# a comment` : '');
  const comment = (): string => (chance(g, 10) ? ' # note' : '');
  let text = `${chance(g, 10) ? '# header comment\n' : ''}model\n${indent}schema ${chance(g, 97) ? pick(g, ['1.1', '1.1', '1.2']) : '1.0'}${comment()}\n`;
  for (const t of types) {
    text += `${blank()}\ntype ${t}${comment()}`;
    const rels = subset(g, REL_NAMES, 0, 4);
    if (rels.length === 0) continue;
    text += `\n${indent}relations`;
    const ctx: Ctx = { types, rels: safe ? [] : rels, conds: allConds, safe, used };
    for (const r of rels) {
      ctx.pool = [...ctx.rels];
      text += `\n${indent}${indent}define ${r}${chance(g, 5) ? ' ' : ''}: ${definition(g, ctx, 2)}${comment()}`;
      if (safe) ctx.rels = [...ctx.rels, r];
    }
  }
  const conds = safe ? allConds.filter((c) => used.has(c)) : allConds;
  for (const c of conds) {
    const params = subset(g, ['x', 'y', 'ip', 'm', 'l', 'ts', 'd'], 1, 3).map((p) => `${p}: ${pick(g, PARAM_TYPES)}`);
    text += `\n${blank()}\ncondition ${c}(${params.join(', ')}) {\n${indent}${pick(g, EXPRESSIONS)}\n}`;
  }
  return `${text}\n`;
}

const INSERTS = [' ', '\n', '  ', 'or ', ' and ', ' but not ', '[', ']', '(', ')', ',', ':', '#', ' #', '*', 'with ', ' from x', 'define ', 'type ', '\t', '{', '}', 'é', '@', '"', '1.1', 'relations\n', '\r\n'];

/** A text mutated by 1–3 random edits (deletions, insertions, line swaps). */
export function mutate(g: Gen, text: string): string {
  let s = text;
  const edits = g(fc.integer, { min: 1, max: 3 });
  for (let i = 0; i < edits; i++) {
    const at = g(fc.integer, { min: 0, max: Math.max(0, s.length - 1) });
    const kind = g(fc.integer, { min: 0, max: 3 });
    if (kind === 0) s = s.slice(0, at) + s.slice(at + g(fc.integer, { min: 1, max: 6 }));
    else if (kind === 1 || kind === 2) s = s.slice(0, at) + pick(g, INSERTS) + s.slice(at);
    else {
      const lines = s.split('\n');
      const a = g(fc.integer, { min: 0, max: lines.length - 1 });
      const b = g(fc.integer, { min: 0, max: lines.length - 1 });
      [lines[a], lines[b]] = [lines[b] as string, lines[a] as string];
      s = lines.join('\n');
    }
  }
  return s;
}

const DEFINITION_FRAGMENTS = ['a', 'b', 'p', ' ', '  ', ' or ', ' and ', ' but not ', ' from ', 'from', 'or', '(', ')', '[', ']', 'user', 'doc', ', ', ',', ':*', '#a', ' with ', 'c', '\t', '\n', '\n    ', 'a.b', 'x/y', '-', 'but  not', '  or ', ' # z', '#', 'type', 'model', '1.1'];
const FILE_FRAGMENTS = ['model', 'schema', ' ', '1.1', '1.2', '\n', '\n  ', '\n\n', 'type', 'user', 'doc', 'relations', 'define', 'define ', '\n    define ', '\n  relations\n    define a: ', 'a', ':', ' [user]', '[user]', 'condition', 'c', '(', ')', 'x', ': ', 'int', 'map<int>', 'list<string>', ', ', ' {', '{', '}', 'x < 1', '"a}"', '\t', '\r\n', ' #c', '# c\n', 'extend', 'module', 'm', 'with c', ' with c', '//x', "'q'", 'r"x"', '1u', '.5', '\f', 'é', '&&', 'a.b', 'a/b', 'a-', '1a', '\r', ':*', 'user#a', ' or ', ' but not ', ' from ', 'in', 'null', '\\', '@'];
const FILE_PREFIXES = ['module m\n', 'model\n  schema 1.2\n', 'model\n  schema 1.1\n', 'model\n  schema 1.1\ntype user\n', 'model\n  schema 1.1\ntype user\ntype doc\n  relations\n    define a: [user with c]\n', ''];

/** A relation definition made of random grammar fragments, inside an otherwise valid model. */
export const definitionSoup = fc
  .tuple(fc.array(fc.constantFrom(...DEFINITION_FRAGMENTS), { minLength: 1, maxLength: 9 }), fc.boolean())
  .map(
    ([parts, withCondition]) =>
      'model\n  schema 1.1\ntype user\ntype doc\n  relations\n    define a: [user]\n    define b: [user, doc#a]\n    define p: [doc]\n' +
      `    define z: ${parts.join('')}\n${withCondition ? 'condition c(x: int) {\n  x < 1\n}\n' : ''}`,
  );

/** A file made of random fragments of every part of the language after a valid or empty prefix. */
export const fileSoup = fc
  .tuple(fc.constantFrom(...FILE_PREFIXES), fc.array(fc.constantFrom(...FILE_FRAGMENTS), { minLength: 1, maxLength: 14 }))
  .map(([prefix, parts]) => prefix + parts.join(''));

/** fast-check parameters: `numRuns`, plus FC_SEED / FC_PATH from the environment to replay a failure. */
export function fcParams(numRuns: number): fc.Parameters<unknown> {
  const p: fc.Parameters<unknown> = { numRuns };
  // With CI set, test/helpers/fast_check_ci.ts fixes the seed of every property (reproducible landing runs).
  if (process.env['FC_SEED'] !== undefined) p.seed = Number(process.env['FC_SEED']);
  if (process.env['FC_PATH'] !== undefined) p.path = process.env['FC_PATH'];
  return p;
}

/** One to three module files cut from generated models (some with `extend type`, optionally mutated). */
export function genModuleFiles(g: Gen): Array<{ name: string; contents: string }> {
  const count = g(fc.integer, { min: 1, max: 3 });
  const broken = chance(g, 50);
  return Array.from({ length: count }, (_, i) => {
    let text = genModelText(g).replace(/^(# header comment\n)?model\n\s*schema \d\.\d( # note)?\n/, `module m${i % 2}\n`);
    if (i > 0 && chance(g, 50)) text = text.replace(/\ntype /, '\nextend type ');
    if (broken) text = mutate(g, text);
    return { name: `f${i}.fga`, contents: text };
  });
}

/**
 * A model whose relations name each other freely, so most of them have
 * cycles: through computed usersets under union, intersection and exclusion,
 * through userset restrictions (`[doc#a]`) and through tuple-to-usersets
 * (`a from parent`). `user` is the only concrete type; `doc` and `folder`
 * each have a tupleset `parent` and two to four of the relations a–d. About
 * half the relations start with a restriction, so many cycles have a way in.
 */
export function genCyclicModel(g: Gen): string {
  const objectTypes = chance(g, 50) ? ['doc'] : ['doc', 'folder'];
  const rels = new Map(objectTypes.map((t) => [t, subset(g, ['a', 'b', 'c', 'd'], 2, 4)]));
  const ref = (type: string): string => pick(g, rels.get(type)!);
  const operand = (type: string, depth: number): string => {
    const k = g(fc.integer, { min: 0, max: 9 });
    if (k < 6) return ref(type);
    if (k < 8) return `${pick(g, rels.get(pick(g, objectTypes))!)} from parent`;
    if (depth > 0) return `(${expression(type, depth - 1, false)})`;
    return ref(type);
  };
  const restriction = (): string => {
    const k = g(fc.integer, { min: 0, max: 9 });
    if (k < 4) return 'user';
    if (k < 5) return 'user:*';
    const t = pick(g, objectTypes);
    return `${t}#${pick(g, rels.get(t)!)}`;
  };
  const expression = (type: string, depth: number, top: boolean): string => {
    const first = top && chance(g, 70) ? `[${[...new Set(Array.from({ length: g(fc.integer, { min: 1, max: 2 }) }, restriction))].join(', ')}]` : operand(type, depth);
    const op = g(fc.integer, { min: 0, max: 9 });
    if (op < 2) return first;
    // Distinct operands, so few models trip the duplicate rule.
    const operands = [first];
    const n = op < 8 ? g(fc.integer, { min: 1, max: 2 }) : 1;
    for (let i = 0; i < 4 && operands.length <= n; i++) {
      const o = operand(type, depth);
      if (!operands.includes(o)) operands.push(o);
    }
    if (operands.length === 1) return first;
    if (op >= 8) return `${operands[0]} but not ${operands[1]}`;
    return operands.join(op < 6 ? ' or ' : ' and ');
  };
  let text = 'model\n  schema 1.1\ntype user\n';
  for (const type of objectTypes) {
    text += `type ${type}\n  relations\n    define parent: [${subset(g, objectTypes, 1, 2).join(', ')}]\n`;
    for (const r of rels.get(type)!) text += `    define ${r}: ${expression(type, 1, true)}\n`;
  }
  return text;
}
