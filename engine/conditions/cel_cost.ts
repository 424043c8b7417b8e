/**
 * cel-go's runtime cost of an evaluation (`interpreter/runtimecost.go`,
 * `CostTracker`; constants from `common/cost.go`), computed over
 * `@marcbachmann/cel-js`'s syntax tree so that OpenFGA's limit
 * (`maxConditionEvaluationCost`, default 100) stops the same expressions.
 * The evaluator (`cel.ts`) records each node's value and calls
 * {@link nodeCost} or {@link macroCost} after it.
 *
 * Pinned by test/engine/conditions_cel.test.ts (costs and the limit).
 */

/** cel-go's cost constants (`common/cost.go`). */
const STRING_TRAVERSAL_FACTOR = 0.1;
const REGEX_LENGTH_FACTOR = 0.25;
const LIST_CREATE_COST = 10;
const MAP_CREATE_COST = 30;

/** Raised when an evaluation goes over its cost limit (cel-go: "operation cancelled: actual cost limit exceeded"). */
export class CostLimitError extends Error {
  readonly limit: number;
  constructor(limit: number) {
    super(`operation cancelled: actual cost limit exceeded (limit ${limit})`);
    this.limit = limit;
  }
}

/** A node's evaluation, as the library calls it: evaluator, node, activation. */
export type EvalFn = (ev: unknown, ast: unknown, ctx: unknown) => unknown;
/** The parts of the library's syntax-tree node (`ASTNode`) that the evaluator and the cost rules read. */
export interface Node {
  op: string;
  args: unknown;
  start: number;
  end: number;
  input: string;
  meta: { alternate?: Node; macro?: { evaluate: EvalFn }; evaluate: EvalFn };
  evaluate: EvalFn;
  /** The library's type check of the node (`ASTNode.check`), with the checker first. */
  check: (chk: unknown, ast: unknown, ctx: unknown) => unknown;
  checkedType?: unknown;
}

/** True for a syntax-tree node (not a literal argument such as a function name). */
export function isNode(x: unknown): x is Node {
  return typeof x === 'object' && x !== null && typeof (x as Node).op === 'string' && 'meta' in (x as object);
}

/** What the cost rules need to know of a node's evaluations: its last value, how often it ran and answered true. */
export interface NodeState {
  value: unknown;
  evals: number;
  trues: number;
}
/** Evaluation state by node, for one compiled program. */
export type States = Map<Node, NodeState>;

/** The running cost of one evaluation; throws {@link CostLimitError} once it passes `limit`. */
export class Meter {
  cost = 0;
  exceeded = false;
  readonly limit: number;
  constructor(limit: number) {
    this.limit = limit;
  }
  add(n: number): void {
    this.cost += n;
    if (this.cost > this.limit) {
      this.exceeded = true;
      throw new CostLimitError(this.limit);
    }
  }
}

/** cel-go's `actualSize`: a string's code points, a bytes' length, a list's or map's entries, else 1. */
export function size(v: unknown): number {
  if (typeof v === 'string') {
    let n = 0;
    for (const _ of v) n++;
    return n;
  }
  if (v instanceof Uint8Array || Array.isArray(v)) return v.length;
  if (v instanceof Map || v instanceof Set) return v.size;
  if (typeof v === 'object' && v !== null && Object.getPrototypeOf(v) === Object.prototype) return Object.keys(v).length;
  return 1;
}

const isText = (v: unknown): boolean => typeof v === 'string' || v instanceof Uint8Array;
const factor = (n: number, f: number): number => Math.ceil(n * f);

/** An identifier, or a select/index chain on one: cel-go plans it as one attribute. */
function isAttribute(n: Node): boolean {
  if (n.op === 'id') return true;
  if (n.op === '.' || n.op === '.?' || n.op === '[]' || n.op === '[?]') return isAttribute((n.args as Node[])[0]!);
  return false;
}

/** A macro call as written: which macro, its range and its predicate. */
export interface MacroShape {
  kind: string;
  receiver: Node;
  predicate: Node;
}

/** The nodes of the expression as written (not the library's macro expansions). */
export function children(n: Node): Node[] {
  const a = n.args;
  switch (n.op) {
    case 'value':
    case 'id':
      return [];
    case 'call':
      return ((a as [string, Node[]])[1] ?? []).filter(isNode);
    case 'rcall': {
      const [, recv, args] = a as [string, Node, Node[]];
      return [recv, ...args].filter(isNode);
    }
    case 'map':
      return (a as [Node, Node][]).flat().filter(isNode);
    default:
      if (Array.isArray(a)) return a.filter(isNode);
      return isNode(a) ? [a] : [];
  }
}

/** The shape of `n` when it is a comprehension macro (`all`, `exists`, `exists_one`, `map`, `filter`). */
export function macroShape(n: Node): MacroShape | undefined {
  if (n.op !== 'rcall' || n.meta.alternate?.op !== 'comprehension') return undefined;
  const [name, receiver, args] = n.args as [string, Node, Node[]];
  const predicate = name === 'map' ? args[args.length - 1]! : args[1]!;
  return { kind: name === 'map' && args.length === 3 ? 'map_filter' : name, receiver, predicate: name === 'map' && args.length === 3 ? args[1]! : predicate };
}

/** cel-go's per-call cost (`CostTracker.costCall`). */
function callCost(n: Node, states: States): number {
  const v = (x: Node | undefined): unknown => (x === undefined ? undefined : states.get(x)?.value);
  let name: string;
  let args: Node[];
  if (n.op === 'rcall') {
    const [fn, recv, rest] = n.args as [string, Node, Node[]];
    name = fn;
    args = [recv, ...rest];
  } else {
    const [fn, rest] = n.args as [string, Node[]];
    name = fn;
    args = rest;
  }
  switch (name) {
    case 'startsWith':
    case 'endsWith':
      return isText(v(args[0])) ? factor(size(v(args[1])), STRING_TRAVERSAL_FACTOR) : 1;
    case 'contains':
      return isText(v(args[0])) ? factor(size(v(args[0])), STRING_TRAVERSAL_FACTOR) * factor(size(v(args[1])), STRING_TRAVERSAL_FACTOR) : 1;
    case 'matches':
      return factor(1 + size(v(args[0])), STRING_TRAVERSAL_FACTOR) * factor(size(v(args[1])), REGEX_LENGTH_FACTOR);
    default:
      return 1;
  }
}

/** cel-go's cost of one evaluation of `n`, from the values its operands last had. */
export function nodeCost(n: Node, states: States): number {
  const val = (x: unknown): unknown => states.get(x as Node)?.value;
  const args = n.args as Node[];
  switch (n.op) {
    case 'value':
    case '&&':
    case '||':
    case '?:':
      return 0;
    case 'id':
      return 1;
    case '.':
    case '.?':
    case '[]':
    case '[?]':
      // An attribute costs 1 and each qualifier 1; a qualifier on a computed
      // value makes a relative attribute (1 + 1).
      return isAttribute(args[0]!) ? 1 : 2;
    case '!_':
      return 1;
    case '-_': {
      // cel-go's parser reads `-1` as one literal.
      const operand = n.args as Node;
      return operand.op === 'value' && !n.input.slice(n.start, n.end).includes('(') ? 0 : 1;
    }
    case '==':
    case '!=':
      return factor(Math.min(size(val(args[0])), size(val(args[1]))), STRING_TRAVERSAL_FACTOR);
    case '<':
    case '<=':
    case '>':
    case '>=': {
      const l = val(args[0]);
      const r = val(args[1]);
      return isText(l) && isText(r) ? factor(Math.min(size(l), size(r)), STRING_TRAVERSAL_FACTOR) : 1;
    }
    case 'in':
      return Array.isArray(val(args[1])) ? size(val(args[1])) : 1;
    case '+': {
      const l = val(args[0]);
      const r = val(args[1]);
      return isText(l) && isText(r) ? factor(size(l) + size(r), STRING_TRAVERSAL_FACTOR) : 1;
    }
    case 'list':
      return LIST_CREATE_COST;
    case 'map':
      return MAP_CREATE_COST;
    case 'call':
      if (n.meta.macro !== undefined) {
        // has(a.b.c): the attribute and each qualifier, the identifier being counted by itself.
        let depth = 0;
        for (let x = (n.args as [string, Node[]])[1][0]; x !== undefined && (x.op === '.' || x.op === '.?'); x = (x.args as Node[])[0]) depth++;
        return depth;
      }
      return callCost(n, states);
    case 'rcall':
      return callCost(n, states);
    default:
      return 1;
  }
}

/**
 * The overhead cel-go's macro expansions add around the predicate
 * (`parser/macro.go`): accumulator reads, the loop condition, list
 * construction for map/filter, and the result read.
 */
export function macroCost(shape: MacroShape, steps: number, trues: number, rangeSize: number): number {
  switch (shape.kind) {
    case 'all':
    case 'exists': {
      // The loop condition runs before each step and once more when it stops the loop early.
      const conditions = steps + (steps < rangeSize ? 1 : 0);
      return conditions * (shape.kind === 'all' ? 2 : 3) + steps + 1;
    }
    case 'exists_one':
      return steps + trues + 2;
    case 'map':
      return LIST_CREATE_COST + steps * (LIST_CREATE_COST + 2) + 1;
    case 'map_filter':
      return LIST_CREATE_COST + trues * (LIST_CREATE_COST + 2) + (steps - trues) + 1;
    case 'filter':
      return LIST_CREATE_COST + trues * (LIST_CREATE_COST + 3) + (steps - trues) + 1;
    default:
      return 0;
  }
}
