/**
 * Expand: one level of the userset tree of `object#relation`, in OpenFGA's
 * `UsersetTree` JSON shape (`openfga/v1/openfga.proto`):
 *
 * ```
 * { tree: { root: Node } }
 * Node = { name: "type:id#relation", leaf | union | intersection | difference }
 * leaf = { users: { users: string[] } }
 *      | { computed: { userset: "type:id#other" } }
 *      | { tupleToUserset: { tupleset: "type:id#parent", computed: [{ userset: "folder:x#viewer" }] } }
 * union / intersection = { nodes: Node[] };  difference = { base: Node, subtract: Node }
 * ```
 *
 * Child nodes carry their parent's name. Direct users are deduplicated and
 * sorted. The client recurses into computed and tuple-to-userset leaves.
 */
import type { TupleReader } from './reader.ts';
import type { Userset } from './model.ts';

/** A leaf of the userset tree. */
export type ExpandLeaf =
  | { users: { users: string[] } }
  | { computed: { userset: string } }
  | { tupleToUserset: { tupleset: string; computed: { userset: string }[] } };

/** A node of the userset tree. */
export type ExpandNode =
  | { name: string; leaf: ExpandLeaf }
  | { name: string; union: { nodes: ExpandNode[] } }
  | { name: string; intersection: { nodes: ExpandNode[] } }
  | { name: string; difference: { base: ExpandNode; subtract: ExpandNode } };

/** Builds the node for `rw` on `type:id#relation`. */
export async function expandRewrite(reader: TupleReader, type: string, id: string, relation: string, rw: Userset): Promise<ExpandNode> {
  const name = `${type}:${id}#${relation}`;
  if ('this' in rw) {
    const tuples = await reader.objectRelation(type, id, relation, 'all');
    const users = [...new Set(tuples.map((t) => t.tuple.user))].sort();
    return { name, leaf: { users: { users } } };
  }
  if ('computedUserset' in rw) return { name, leaf: { computed: { userset: `${type}:${id}#${rw.computedUserset.relation ?? ''}` } } };
  if ('tupleToUserset' in rw) {
    const ts = rw.tupleToUserset.tupleset.relation ?? '';
    const target = rw.tupleToUserset.computedUserset.relation ?? '';
    const tuples = await reader.objectRelation(type, id, ts, 'all');
    const computed = [...new Set(tuples.filter((t) => t.user.kind === 'object').map((t) => `${t.tuple.user}#${target}`))]
      .sort()
      .map((userset) => ({ userset }));
    return { name, leaf: { tupleToUserset: { tupleset: `${type}:${id}#${ts}`, computed } } };
  }
  if ('union' in rw) return { name, union: { nodes: await Promise.all(rw.union.child.map((c) => expandRewrite(reader, type, id, relation, c))) } };
  if ('intersection' in rw) {
    return { name, intersection: { nodes: await Promise.all(rw.intersection.child.map((c) => expandRewrite(reader, type, id, relation, c))) } };
  }
  const d = (rw as { difference: { base: Userset; subtract: Userset } }).difference;
  const [base, subtract] = await Promise.all([expandRewrite(reader, type, id, relation, d.base), expandRewrite(reader, type, id, relation, d.subtract)]);
  return { name, difference: { base, subtract } };
}
