/**
 * The functions, macros and names OpenFGA's CEL environment declares, and
 * the check that a condition written into a new model version uses no other.
 *
 * OpenFGA builds its condition environment from cel-go's standard library,
 * its parameter types and the `ipaddress` extension
 * (`openfga/openfga:internal/condition/condition.go`, `NewUncompiled` /
 * `Compile`; `internal/condition/types/ipaddress.go`), with none of cel-go's
 * extension libraries (`ext.Strings`, `ext.Math`, `ext.Encoders`,
 * `ext.Bindings`, `ext.Sets`, `ext.Lists`, `ext.Protos`, `cel.OptionalTypes`).
 * `@marcbachmann/cel-js` offers more: string methods (`substring`, `split`,
 * `trim`, `lowerAscii`, `upperAscii`, `join`, `indexOf`, `lastIndexOf`),
 * bytes methods (`hex`, `base64`, `json`, `string`, `at`), `cel.bind` and the
 * `optional` namespace. cel-go's checker answers a call to any of them with
 * "undeclared reference to '<name>'", so OpenFGA refuses the model; this
 * module gives the same refusal by walking the library's syntax tree (the
 * tree as written, before its macro expansions), never the source text.
 *
 * The check is applied only when a model version is written. Versions
 * already stored compile without it, so deployments whose conditions use
 * such functions keep loading and answering (docs/engine.md, Conditions).
 *
 * Pinned by test/engine/conditions_allowlist.test.ts,
 * test/engine/conditions_allowlist.property.test.ts and
 * test/features/fga/fga_condition_allowlist.test.ts.
 */
import { type Node, children, isNode } from './cel_cost.ts';

/**
 * Global functions of cel-go's standard library (type conversions, `size`,
 * `matches`, the `has` macro) and OpenFGA's `ipaddress(string)`. Operators
 * are syntax-tree nodes of their own, not calls.
 */
export const OPENFGA_GLOBAL_FUNCTIONS: ReadonlySet<string> = new Set([
  'size',
  'matches',
  'has',
  'int',
  'uint',
  'double',
  'string',
  'bytes',
  'bool',
  'duration',
  'timestamp',
  'dyn',
  'type',
  'ipaddress',
]);

/**
 * Receiver-style functions of cel-go's standard library (string tests,
 * `size`, timestamp and duration accessors, the comprehension macros) and
 * OpenFGA's `ipaddress.in_cidr(string)`.
 */
export const OPENFGA_MEMBER_FUNCTIONS: ReadonlySet<string> = new Set([
  'size',
  'contains',
  'startsWith',
  'endsWith',
  'matches',
  'getFullYear',
  'getMonth',
  'getDayOfYear',
  'getDayOfMonth',
  'getDate',
  'getDayOfWeek',
  'getHours',
  'getMinutes',
  'getSeconds',
  'getMilliseconds',
  'in_cidr',
  'all',
  'exists',
  'exists_one',
  'map',
  'filter',
]);

/** The comprehension macros, whose first argument names the iteration variable. */
const COMPREHENSIONS: ReadonlySet<string> = new Set(['all', 'exists', 'exists_one', 'map', 'filter']);

/**
 * Names that are not variables in OpenFGA's environment but that the library
 * declares (`cel`, `optional`) or that cel-go's extension libraries use as
 * namespaces. A declared parameter or an iteration variable of that name is
 * an ordinary variable.
 */
const UNDECLARED_NAMESPACES: ReadonlySet<string> = new Set(['cel', 'optional', 'math', 'strings', 'base64', 'sets', 'lists', 'proto']);

/** A function, macro or name that OpenFGA's CEL environment does not declare. */
export class UndeclaredReference extends TypeError {
  /** The function or name as written: `substring`, `math.greatest`, `cel.bind`, `optional`. */
  readonly reference: string;
  constructor(message: string, reference: string) {
    super(message);
    this.reference = reference;
  }
}

/** cel-go's checker message for `reference`, and why this environment lacks it. */
export function undeclaredMessage(reference: string): string {
  return `undeclared reference to '${reference}': OpenFGA's conditions have CEL's standard library and ipaddress only`;
}

/**
 * Throws {@link UndeclaredReference} for the first call, macro or name in
 * `root` that OpenFGA's CEL environment does not declare, innermost first
 * and then left to right (so `s.trim().lowerAscii()` names `trim`).
 * `variables` are the condition's parameters.
 */
export function checkOpenFgaEnvironment(root: Node, variables: ReadonlySet<string>): void {
  const refuse = (reference: string): never => {
    throw new UndeclaredReference(undeclaredMessage(reference), reference);
  };
  const undeclared = (x: Node, scope: ReadonlySet<string>): boolean => x.op === 'id' && UNDECLARED_NAMESPACES.has(x.args as string) && !scope.has(x.args as string);
  // Iterative post-order walk, with the iteration variables in scope at each node (the library nests a
  // tree up to 250 deep). `receiver` marks a namespace that its call names whole (`math.greatest`).
  type Frame = { node: Node; scope: ReadonlySet<string>; visited: boolean; receiver: boolean };
  const stack: Frame[] = [{ node: root, scope: variables, visited: false, receiver: false }];
  while (stack.length > 0) {
    const frame = stack.pop()!;
    const { node, scope } = frame;
    if (frame.visited) {
      if (node.op === 'call') {
        const name = (node.args as [string])[0];
        if (!OPENFGA_GLOBAL_FUNCTIONS.has(name)) refuse(name);
      } else if (node.op === 'rcall') {
        const [name, receiver] = node.args as [string, Node];
        if (undeclared(receiver, scope)) refuse(`${receiver.args as string}.${name}`);
        if (!OPENFGA_MEMBER_FUNCTIONS.has(name)) refuse(name);
      } else if (!frame.receiver && undeclared(node, scope)) {
        refuse(node.args as string);
      }
      continue;
    }
    stack.push({ ...frame, visited: true });
    const push = (nodes: readonly Node[], inner: ReadonlySet<string>): void => {
      for (const n of [...nodes].reverse()) stack.push({ node: n, scope: inner, visited: false, receiver: false });
    };
    if (node.op === 'rcall') {
      const [name, receiver, args] = node.args as [string, Node, Node[]];
      const binder = args[0];
      const comprehension = COMPREHENSIONS.has(name) && (node.meta.macro !== undefined || node.meta.alternate !== undefined) && binder?.op === 'id';
      // The binder names the iteration variable; it is in scope in the arguments after it.
      push(comprehension ? args.slice(1).filter(isNode) : args.filter(isNode), comprehension ? new Set(scope).add(binder.args as string) : scope);
      stack.push({ node: receiver, scope, visited: false, receiver: true });
      continue;
    }
    push(children(node), scope);
  }
}
