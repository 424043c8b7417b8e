/**
 * JSON model → canonical DSL. The layout is OpenFGA's (two-space indents, a
 * blank line between blocks, restrictions as `[a, b:*, c#d with e]`,
 * conditions and their parameters in name order): for every conformance
 * model the text is the one OpenFGA's `transformJSONToDSL` writes
 * (test/dsl/conformance.test.ts).
 * Printing then parsing gives back the same model
 * (test/dsl/printer.property.test.ts).
 */
import type { AuthorizationModel, ConditionParamTypeRef, RelationReference, TypeDefinition, Userset } from '../engine/model.ts';
import { LatchkeyError } from '../engine/errors.ts';

function unsupported(message: string): LatchkeyError {
  return new LatchkeyError('invalid_argument', message, { reason: 'unsupported_dsl_nesting' });
}

function restriction(r: RelationReference): string {
  let s = r.type;
  if (r.wildcard) s += ':*';
  else if (r.relation) s += `#${r.relation}`;
  if (r.condition) s += ` with ${r.condition}`;
  return s;
}

function isOperator(u: Userset): boolean {
  return 'union' in u || 'intersection' in u || 'difference' in u;
}

/**
 * Prints a rewrite. `allowDirect` is true only for the leftmost operand
 * chain of the definition: the DSL writes the direct restriction there and
 * nowhere else.
 */
function rewrite(u: Userset, direct: RelationReference[], allowDirect: boolean, nested: boolean): string {
  if ('this' in u) {
    if (!allowDirect) throw unsupported('the DSL can only write a direct assignment as the first operand of a relation');
    if (direct.length === 0) throw unsupported('a direct assignment needs at least one type restriction');
    return `[${direct.map(restriction).join(', ')}]`;
  }
  if ('computedUserset' in u) return u.computedUserset.relation ?? '';
  if ('tupleToUserset' in u) {
    return `${u.tupleToUserset.computedUserset.relation ?? ''} from ${u.tupleToUserset.tupleset.relation ?? ''}`;
  }
  let text: string;
  if ('union' in u || 'intersection' in u) {
    const children = 'union' in u ? u.union.child : u.intersection.child;
    const op = 'union' in u ? ' or ' : ' and ';
    if (children.length === 0) throw unsupported('an operator needs at least one operand');
    text = children.map((c, i) => operand(c, direct, allowDirect && i === 0)).join(op);
  } else if ('difference' in u) {
    text = `${operand(u.difference.base, direct, allowDirect)} but not ${operand(u.difference.subtract, direct, false)}`;
  } else {
    throw unsupported('unknown rewrite');
  }
  return nested ? `(${text})` : text;
}

function operand(u: Userset, direct: RelationReference[], allowDirect: boolean): string {
  return rewrite(u, direct, allowDirect, isOperator(u));
}

function paramType(p: ConditionParamTypeRef): string {
  const name = p.type_name.replace(/^TYPE_NAME_/, '').toLowerCase();
  const generic = p.generic_types?.[0];
  return generic ? `${name}<${paramType(generic)}>` : name;
}

type SourceMeta = { module?: string; source_info?: { file?: string } } | null | undefined;

/**
 * OpenFGA's order for modular models: entries without a module first (by
 * name), then by module, file and name. Names compare with `localeCompare`,
 * as OpenFGA's printer does.
 */
function byModule(aName: string, bName: string, a: SourceMeta, b: SourceMeta): number {
  if (!a?.module && !b?.module) return aName.localeCompare(bName);
  if (!a?.module) return -1;
  if (!b?.module) return 1;
  if (a.module !== b.module) return a.module.localeCompare(b.module);
  const af = a.source_info?.file ?? '';
  const bf = b.source_info?.file ?? '';
  if (af !== bf) return af.localeCompare(bf);
  return aName.localeCompare(bName);
}

function sourceComment(meta: SourceMeta, lead: string, include: boolean): string {
  return include && meta?.module ? ` #${lead} module: ${meta.module}, file: ${meta.source_info?.file}` : '';
}

function typeDefinition(td: TypeDefinition, modular: boolean, include: boolean): string {
  const lines = [`type ${td.type}${sourceComment(td.metadata, '', include)}`];
  let relations = Object.entries(td.relations ?? {});
  const meta = td.metadata?.relations ?? {};
  if (modular) relations = relations.sort(([a], [b]) => byModule(a, b, meta[a], meta[b]));
  if (relations.length > 0) {
    lines.push('  relations');
    for (const [name, def] of relations) {
      const m = Object.hasOwn(meta, name) ? meta[name] : undefined;
      const direct = m?.directly_related_user_types ?? [];
      lines.push(`    define ${name}: ${rewrite(def, direct, true, false)}${sourceComment(m, ' extended by:', include)}`);
    }
  }
  return lines.join('\n');
}

/** Options of {@link printModel}. */
export type PrintOptions = {
  /** For modular models: end each type, extended relation and condition with `# module: m, file: f`. */
  includeSourceInformation?: boolean;
};

/**
 * Prints a model as DSL text, in OpenFGA's layout and order: types as given
 * (modular models: grouped by module and file), conditions by name,
 * parameters by name. Throws `invalid_argument` (reason
 * `unsupported_dsl_nesting`) when the JSON uses a shape the DSL cannot write,
 * such as a direct assignment that is not the first operand.
 */
export function printModel(model: AuthorizationModel, options: PrintOptions = {}): string {
  const include = options.includeSourceInformation === true;
  let types = model.type_definitions ?? [];
  const modular = types.some((td) => td.metadata?.module);
  if (modular) types = [...types].sort((a, b) => byModule(a.type, b.type, a.metadata, b.metadata));
  const blocks = [`model\n  schema ${model.schema_version || '1.1'}`];
  for (const td of types) blocks.push(typeDefinition(td, modular, include));
  const conditions = Object.entries(model.conditions ?? {}).sort(([a, ca], [b, cb]) =>
    modular ? byModule(a, b, ca.metadata, cb.metadata) : a.localeCompare(b),
  );
  for (const [, c] of conditions) {
    const params = Object.entries(c.parameters ?? {})
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([n, p]) => `${n}: ${paramType(p)}`)
      .join(', ');
    blocks.push(`condition ${c.name}(${params}) {\n  ${c.expression}\n}${sourceComment(c.metadata, '', include)}`);
  }
  return `${blocks.join('\n\n')}\n`;
}
