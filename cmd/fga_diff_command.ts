/**
 * `latchkey fga diff OLD NEW [--tuples FILE]`: which users gain or lose
 * which relations when the model OLD becomes NEW, on the given tuples and
 * on generated ones (docs/testing-models.md, "Model-change impact").
 */
import { resolve } from 'node:path';
import { Engine, type AuthorizationModel, type TupleKey } from '../engine/index.ts';
import { diffModels } from '../engine/testing/index.ts';
import { describeError, loadModelOrStore, loadTupleFile, parseArgs, parseYaml, readText, StoreFileError } from './fga_store_file.ts';

interface RelationChange {
  gained: string[];
  lost: string[];
}

function sharedRelations(a: AuthorizationModel, b: AuthorizationModel): { shared: string[]; onlyA: string[]; onlyB: string[] } {
  const names = (m: AuthorizationModel): string[] => (m.type_definitions ?? []).flatMap((td) => Object.keys(td.relations ?? {}).map((r) => `${td.type}#${r}`));
  const x = names(a);
  const y = new Set(names(b));
  return { shared: x.filter((r) => y.has(r)), onlyA: x.filter((r) => !y.has(r)), onlyB: [...y].filter((r) => !x.includes(r)) };
}

/** An engine of `model` on a memory store, for the given tuples. */
async function engineWithTuples(model: AuthorizationModel): Promise<Engine> {
  const engine = new Engine({ maxTuplesPerWrite: 1000, listObjectsMaxResults: 100_000 });
  await engine.writeModel(model);
  return engine;
}

/** Writes `tuples`, one by one after a refused batch; returns the tuples the model refused. */
async function writeAdmitted(engine: Engine, tuples: readonly TupleKey[]): Promise<TupleKey[]> {
  const refused: TupleKey[] = [];
  for (let i = 0; i < tuples.length; i += 1000) {
    const batch = tuples.slice(i, i + 1000);
    try {
      await engine.write({ writes: batch });
    } catch {
      for (const t of batch) await engine.write({ writes: [t] }).catch(() => refused.push(t));
    }
  }
  return refused;
}

/** Runs `latchkey fga diff <argv…>`; resolves to the exit status. `usage` is printed after a usage error. */
export async function runDiff(argv: string[], out: (s: string) => void, err: (s: string) => void, usage: string): Promise<number> {
  const parsed = parseArgs(argv, ['tuples', 'must-not-change', 'seed', 'runs', 'examples']);
  if (typeof parsed === 'string' || parsed.positional.length !== 2) {
    err(`latchkey fga diff: ${typeof parsed === 'string' ? parsed : 'give two models: OLD NEW'}\n\n${usage}`);
    return 2;
  }
  const num = (name: string, def: number | undefined, min: number): number | undefined | string => {
    const v = parsed.flags[name];
    if (v === undefined) return def;
    const n = Number(v);
    return Number.isSafeInteger(n) && n >= min ? n : `--${name} must be an integer of at least ${min}`;
  };
  const seed = num('seed', undefined, Number.MIN_SAFE_INTEGER);
  const runs = num('runs', 200, 0);
  const examples = num('examples', 3, 0);
  for (const v of [seed, runs, examples]) {
    if (typeof v === 'string') {
      err(`latchkey fga diff: ${v}\n`);
      return 2;
    }
  }
  const [oldPath, newPath] = parsed.positional.map((p) => resolve(p)) as [string, string];
  let oldModel: AuthorizationModel;
  let newModel: AuthorizationModel;
  let given: TupleKey[] | undefined;
  let at = oldPath;
  try {
    const o = loadModelOrStore(oldPath);
    at = newPath;
    const n = loadModelOrStore(newPath);
    oldModel = o.model;
    newModel = n.model;
    given = o.tuples;
    const tuplesFlag = parsed.flags['tuples'];
    if (tuplesFlag !== undefined) {
      at = resolve(tuplesFlag);
      given = /\.ya?ml$/iu.test(at) && !Array.isArray(parseYaml(readText(at, 'tuple file'))) ? loadModelOrStore(at).tuples : loadTupleFile(at);
    }
  } catch (e) {
    err(`${at}: ${e instanceof StoreFileError ? e.message : describeError(e)}\n`);
    return 1;
  }
  const { shared, onlyA, onlyB } = sharedRelations(oldModel, newModel);
  const mustNotChange = (parsed.flags['must-not-change'] ?? '').split(',').map((r) => r.trim()).filter((r) => r !== '');
  for (const r of mustNotChange) {
    if (!shared.includes(r)) {
      err(`latchkey fga diff: --must-not-change: '${r}' is not a relation of both models\n`);
      return 2;
    }
  }
  if (onlyA.length > 0) out(`only in the old model: ${onlyA.join(', ')}\n`);
  if (onlyB.length > 0) out(`only in the new model: ${onlyB.join(', ')}\n`);
  const broken = new Set<string>();
  const show = (changes: Map<string, RelationChange>, what: string): void => {
    const changed = shared.filter((r) => (changes.get(r)?.gained.length ?? 0) + (changes.get(r)?.lost.length ?? 0) > 0);
    out(`${what}: ${changed.length === 0 ? 'no answer changes' : `${changed.length} relation${changed.length === 1 ? '' : 's'} change`}\n`);
    for (const r of changed) {
      const c = changes.get(r)!;
      const guard = mustNotChange.includes(r);
      if (guard) broken.add(r);
      out(`  ${r}: ${c.gained.length} gained, ${c.lost.length} lost${guard ? '  (must not change)' : ''}\n`);
      for (const x of c.gained.slice(0, examples as number)) out(`    + ${x}\n`);
      for (const x of c.lost.slice(0, examples as number)) out(`    - ${x}\n`);
    }
  };

  try {
    if (given !== undefined) {
      const oldEngine = await engineWithTuples(oldModel);
      const newEngine = await engineWithTuples(newModel);
      const refusedOld = await writeAdmitted(oldEngine, given);
      const refusedNew = await writeAdmitted(newEngine, given);
      if (refusedOld.length > 0) out(`the old model does not admit ${refusedOld.length} of the tuples (left out), e.g. ${refusedOld[0]!.object}#${refusedOld[0]!.relation}@${refusedOld[0]!.user}\n`);
      if (refusedNew.length > 0) out(`the new model does not admit ${refusedNew.length} of the tuples (left out), e.g. ${refusedNew[0]!.object}#${refusedNew[0]!.relation}@${refusedNew[0]!.user}\n`);
      const users = [...new Set(given.map((t) => t.user).filter((u) => !u.includes('#') && !u.endsWith(':*')))].sort();
      const changes = new Map<string, RelationChange>();
      let undecided = 0;
      for (const r of shared) {
        const [type, relation] = r.split('#') as [string, string];
        const c: RelationChange = { gained: [], lost: [] };
        for (const user of users) {
          const list = async (engine: Engine): Promise<Set<string>> => {
            const res = await engine.listObjects({ user, relation, type, reportUndecided: true });
            undecided += res.undecided?.length ?? 0;
            return new Set(res.objects);
          };
          const before = await list(oldEngine);
          const after = await list(newEngine);
          for (const o of after) if (!before.has(o)) c.gained.push(`${user} ${relation} ${o}`);
          for (const o of before) if (!after.has(o)) c.lost.push(`${user} ${relation} ${o}`);
        }
        changes.set(r, c);
      }
      show(changes, `on the given ${given.length} tuples (${users.length} users)`);
      if (undecided > 0) out(`  (${undecided} answers left undecided: conditions without a request context)\n`);
    }

    if ((runs as number) > 0) {
      const impact = await diffModels(oldModel, newModel, { numRuns: runs as number, ...(seed === undefined ? {} : { seed: seed as number }) });
      const changed = impact.relations.filter((r) => r.gained + r.lost > 0);
      out(`on ${impact.numRuns} generated stores (seed ${impact.seed}): ${changed.length === 0 ? 'no answer changes' : `${changed.length} relation${changed.length === 1 ? '' : 's'} change`}\n`);
      for (const r of changed) {
        const guard = mustNotChange.includes(r.relation);
        if (guard) broken.add(r.relation);
        out(`  ${r.relation}: ${r.gained} gained in ${r.storesGaining} stores, ${r.lost} lost in ${r.storesLosing} stores${guard ? '  (must not change)' : ''}\n`);
        const ce = r.example;
        if (ce?.check !== undefined && (examples as number) > 0) {
          out(`    smallest example: ${ce.check.actual === true ? '+' : '-'} ${ce.check.user} ${ce.check.relation} ${ce.check.object} (old ${JSON.stringify(ce.check.expected)}, new ${JSON.stringify(ce.check.actual)}) with ${ce.tuples.length} tuple${ce.tuples.length === 1 ? '' : 's'}:\n`);
          for (const t of ce.tuples) out(`      ${t.object}#${t.relation}@${t.user}${t.condition === undefined ? '' : ` with ${t.condition.name}${t.condition.context === undefined ? '' : ` ${JSON.stringify(t.condition.context)}`}`}\n`);
          if (Object.keys(ce.context).length > 0) out(`      context ${JSON.stringify(ce.context)}\n`);
        }
      }
    }
  } catch (e) {
    err(`latchkey fga diff: ${describeError(e)}\n`);
    return 1;
  }
  if (broken.size > 0) {
    err(`latchkey fga diff: ${[...broken].join(', ')} must not change, and ${broken.size === 1 ? 'does' : 'do'}\n`);
    return 1;
  }
  return 0;
}
