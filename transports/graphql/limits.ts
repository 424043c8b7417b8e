/**
 * A validation rule that refuses hostile GraphQL documents before execution:
 * too deep a selection, too many selected fields (complexity), or too many
 * aliases. Fragments are expanded (each counted where it is spread).
 */
import { GraphQLError, Kind, type ASTVisitor, type FragmentDefinitionNode, type SelectionSetNode, type ValidationContext, type ValidationRule } from 'graphql';

export interface GraphqlLimits {
  maxDepth: number;
  maxComplexity: number;
  maxAliases: number;
}

interface Tally {
  fields: number;
  aliases: number;
  depth: number;
}

function walk(
  set: SelectionSetNode,
  depth: number,
  fragments: (name: string) => FragmentDefinitionNode | null | undefined,
  active: Set<string>,
  t: Tally,
  limits: GraphqlLimits,
): void {
  for (const sel of set.selections) {
    if (t.fields > limits.maxComplexity || t.depth > limits.maxDepth) return;
    if (sel.kind === Kind.FIELD) {
      t.fields++;
      if (sel.alias) t.aliases++;
      if (sel.selectionSet) {
        t.depth = Math.max(t.depth, depth + 1);
        walk(sel.selectionSet, depth + 1, fragments, active, t, limits);
      }
    } else if (sel.kind === Kind.INLINE_FRAGMENT) {
      walk(sel.selectionSet, depth, fragments, active, t, limits);
    } else {
      const name = sel.name.value;
      if (active.has(name)) continue; // a cycle; NoFragmentCyclesRule reports it
      const frag = fragments(name);
      if (!frag) continue;
      active.add(name);
      walk(frag.selectionSet, depth, fragments, active, t, limits);
      active.delete(name);
    }
  }
}

export function limitsRule(limits: GraphqlLimits): ValidationRule {
  return (context: ValidationContext): ASTVisitor => ({
    OperationDefinition(node) {
      const t: Tally = { fields: 0, aliases: 0, depth: 1 };
      walk(node.selectionSet, 1, (n) => context.getFragment(n), new Set(), t, limits);
      const refuse = (what: string): void =>
        context.reportError(new GraphQLError(what, { nodes: [node], extensions: { code: 'invalid_argument', reason: 'query_too_complex' } }));
      if (t.depth > limits.maxDepth) refuse(`query is deeper than the limit of ${limits.maxDepth}`);
      else if (t.fields > limits.maxComplexity) refuse(`query selects more than ${limits.maxComplexity} fields`);
      else if (t.aliases > limits.maxAliases) refuse(`query uses more than ${limits.maxAliases} aliases`);
    },
  });
}
