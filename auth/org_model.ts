/**
 * The organization model fragment: the FGA types `organization` and `team`
 * that membership, roles and teams are written as (docs/organizations.md,
 * "The model fragment"), and its merge into a store's model.
 *
 * The organization API is itself authorized by checks on these relations
 * (`can_manage_members`, `can_delete`, ...), so a policy change (say, admins
 * may delete organizations) is a model change: redefine the permission
 * relation and install the model.
 */
import type { AuthorizationModel, TypeDefinition, Userset } from '../engine/index.ts';

/** The built-in roles, strongest first. */
export const BUILTIN_ORG_ROLES = ['owner', 'admin', 'member'] as const;

/** The permission relations the organization API checks; they are not roles. */
export const ORG_PERMISSIONS = ['can_read', 'can_update', 'can_delete', 'can_manage_members', 'can_manage_owners', 'can_manage_teams'] as const;

/** A role or custom role name: what a relation name may be, and not a permission or a built-in type's other relation. */
export const ROLE_PATTERN = /^[a-z][a-z0-9_]{0,63}$/;

const direct = (): Userset => ({ this: {} });
const computed = (relation: string): Userset => ({ computedUserset: { relation } });
const union = (...child: Userset[]): Userset => ({ union: { child } });

/** The fragment's type definitions for a server whose custom roles are `customRoles`. */
export function orgModelFragment(customRoles: readonly string[]): TypeDefinition[] {
  const users = { directly_related_user_types: [{ type: 'user' }] };
  const orgRelations: Record<string, Userset> = {
    owner: direct(),
    admin: union(direct(), computed('owner')),
    member: union(direct(), computed('admin'), ...customRoles.map(computed)),
    can_read: computed('member'),
    can_update: computed('admin'),
    can_delete: computed('owner'),
    can_manage_members: computed('admin'),
    can_manage_owners: computed('owner'),
    can_manage_teams: computed('admin'),
  };
  const orgMeta: Record<string, typeof users> = { owner: users, admin: users, member: users };
  for (const role of customRoles) {
    orgRelations[role] = direct();
    orgMeta[role] = users;
  }
  return [
    { type: 'user' },
    { type: 'organization', relations: orgRelations, metadata: { relations: orgMeta } },
    {
      type: 'team',
      relations: {
        organization: direct(),
        member: direct(),
        can_manage: { tupleToUserset: { tupleset: { relation: 'organization' }, computedUserset: { relation: 'can_manage_teams' } } },
      },
      metadata: {
        relations: {
          organization: { directly_related_user_types: [{ type: 'organization' }] },
          member: { directly_related_user_types: [{ type: 'user' }, { type: 'team', relation: 'member' }] },
        },
      },
    },
  ];
}

/** The fragment as DSL text (docs, and `fga_write_model` users who keep it in their own model). */
export function orgModelFragmentDsl(customRoles: readonly string[]): string {
  const custom = customRoles.map((r) => `    define ${r}: [user]\n`).join('');
  const memberOf = ['[user]', 'admin', ...customRoles].join(' or ');
  return (
    'type user\n' +
    'type organization\n  relations\n' +
    '    define owner: [user]\n' +
    '    define admin: [user] or owner\n' +
    `    define member: ${memberOf}\n` +
    custom +
    '    define can_read: member\n' +
    '    define can_update: admin\n' +
    '    define can_delete: owner\n' +
    '    define can_manage_members: admin\n' +
    '    define can_manage_owners: owner\n' +
    '    define can_manage_teams: admin\n' +
    'type team\n  relations\n' +
    '    define organization: [organization]\n' +
    '    define member: [user, team#member]\n' +
    '    define can_manage: can_manage_teams from organization\n'
  );
}

/**
 * The model to install so that `model` has the fragment, or undefined when
 * it has it already. Types the model defines itself are kept as they are
 * (a user's own `organization` type wins: the operator owns the policy);
 * the fragment's missing types are added; a model with custom roles missing
 * from its `organization` type is left to the operator (the service then
 * refuses those roles' writes through the engine's own validation).
 */
export function mergeOrgFragment(model: AuthorizationModel | undefined, customRoles: readonly string[]): AuthorizationModel | undefined {
  const fragment = orgModelFragment(customRoles);
  const types = model?.type_definitions ?? [];
  const have = new Set(types.map((t) => t.type));
  const missing = fragment.filter((t) => !have.has(t.type));
  if (missing.length === 0) return undefined;
  const out: AuthorizationModel = { schema_version: model?.schema_version ?? '1.1', type_definitions: [...types, ...missing] };
  if (model?.conditions !== undefined) out.conditions = model.conditions;
  return out;
}
