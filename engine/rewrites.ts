/**
 * The shape of a userset rewrite node: which kind it is (`this`, computed
 * userset, tuple-to-userset, union, intersection, difference) and its
 * operands. Shared by model validation, the typesystem and the walks over
 * rewrites (ListObjects, ListUsers, check dependencies).
 */
import type { Userset } from './model.ts';

/** Which rewrite kind a userset node is. */
export type RewriteKind = 'this' | 'computed' | 'ttu' | 'union' | 'intersection' | 'difference';

/** The kind of a rewrite node, or `undefined` for a malformed node. */
export function rewriteKind(u: Userset): RewriteKind | undefined {
  if (u === null || typeof u !== 'object') return undefined;
  const keys = Object.keys(u);
  if (keys.length !== 1) return undefined;
  switch (keys[0]) {
    case 'this':
      return 'this';
    case 'computedUserset':
      return 'computed';
    case 'tupleToUserset':
      return 'ttu';
    case 'union':
      return 'union';
    case 'intersection':
      return 'intersection';
    case 'difference':
      return 'difference';
    default:
      return undefined;
  }
}

/** The children of a rewrite node (empty for leaves). */
export function rewriteChildren(u: Userset): Userset[] {
  if ('union' in u) return u.union.child;
  if ('intersection' in u) return u.intersection.child;
  if ('difference' in u) return [u.difference.base, u.difference.subtract];
  return [];
}
