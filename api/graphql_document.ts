/**
 * The GraphQL document of a row: what a client sends to call it, selecting
 * the whole output. The server's schema (transports/graphql/schema.ts) names
 * its types with the same two functions, so a document built here always
 * validates against it (test/client/wire.test.ts).
 */
import { graphqlArg, graphqlName, type AnyOperation } from './operations/types.ts';
import type { ObjectShape, Shape } from './shape.ts';

/** The name of an input object type for `shape`. */
export function inputTypeName(shape: ObjectShape): string {
  if (shape.graphql?.name !== undefined) return shape.graphql.name;
  return /(Request|Input)$/.test(shape.name) ? shape.name : `${shape.name}Input`;
}

/** The name of an output object type for `shape`. */
export function outputTypeName(shape: ObjectShape): string {
  return shape.graphql?.name ?? shape.name;
}

/** A selection set covering every field of an output shape (for clients and tests). */
export function selectionSet(shape: ObjectShape, depth = 0): string {
  if (depth > 8) throw new Error(`output shape ${shape.name} nests too deeply`);
  const parts: string[] = [];
  for (const [k, f] of Object.entries(shape.fields)) {
    let inner: Shape = f.kind === 'optional' ? f.inner : f;
    while (inner.kind === 'list') inner = inner.item;
    parts.push(inner.kind === 'object' ? `${k} ${selectionSet(inner, depth + 1)}` : k);
  }
  return `{ ${parts.join(' ')} }`;
}

/** The GraphQL document that calls `op` with `$params` and selects its whole output. */
export function graphqlDocument(op: AnyOperation): string {
  const name = graphqlName(op);
  const hasParams = Object.keys(op.input.fields).length > 0;
  const arg = graphqlArg(op);
  const varType = `${inputTypeName(op.input)}${arg.nullable ? '' : '!'}`;
  const head = hasParams ? `${op.kind}(${'$'}params: ${varType})` : op.kind;
  return `${head} { ${name}${hasParams ? `(${arg.name}: ${'$'}params)` : ''} ${selectionSet(op.output)} }`;
}
