/**
 * The permission operations (spec: POST /v1/check_permissions, POST
 * /v1/list_permissions): the caller's own relationship checks through the FGA
 * engine, over GraphQL, REST and gRPC alike.
 */
import { s } from '../shape.ts';
import { TUPLE_CONDITION_INPUT, TUPLE_EXPIRES_AT_INPUT } from './admin_shapes.ts';
import { ALL_PROTOCOLS, defineOperation } from './types.ts';

const CONTEXTUAL_TUPLE = s.object('ContextualTupleInput', {
  user: s.string({ minLength: 1, maxLength: 512, doc: '`type:id` or `type:id#relation`' }),
  relation: s.string({ minLength: 1, maxLength: 64 }),
  object: s.string({ minLength: 1, maxLength: 256, doc: '`type:id`' }),
  condition: s.optional(TUPLE_CONDITION_INPUT),
  expires_at: TUPLE_EXPIRES_AT_INPUT,
}, { graphql: { name: 'FgaTupleInput' } });

/** The request context of conditions (OpenFGA's `context`). */
const CONTEXT = s.optional(s.json({ doc: "Values of condition parameters for this request (a JSON object); a tuple's stored values win on a clash" }));

const CHECK_INPUT = s.object('PermissionCheckInput', {
  relation: s.string({ minLength: 1, maxLength: 64 }),
  object: s.string({ minLength: 1, maxLength: 256, doc: '`type:id`' }),
  contextual_tuples: s.optional(s.list(CONTEXTUAL_TUPLE, { maxItems: 100, doc: 'Tuples for this one check; never persisted' })),
  context: CONTEXT,
});

const CHECK_RESULT = s.object('PermissionCheckResult', { relation: s.string(), object: s.string(), allowed: s.bool() });

const CONSISTENCY_TOKEN = s.optional(
  s.string({ maxLength: 20, doc: 'The consistency_token an FGA write returned: the answer reflects at least that write (from a cache only once it has caught up, else from the database)' }),
);

const SUBJECT = s.optional(
  s.string({ maxLength: 512, doc: 'Explicit subject (`type:id`, or a bare id for `user:<id>`): only the caller itself, or anyone for a super-admin' }),
);

/** Why a check answers what it answers (docs/engine.md, "Explain"). */
export const EXPLAIN_RESULT = s.object('ExplainResult', {
  relation: s.string(),
  object: s.string(),
  allowed: s.bool({ doc: "Check's answer for the same request" }),
  tree: s.json({ doc: 'The explanation as a JSON object: nodes with kind, outcome, because and children (docs/engine.md, "Explain"); one witness when allowed, the failed branches when denied' }),
  error: s.optional(
    s.object('ExplainError', { code: s.string(), reason: s.optional(s.string()), message: s.string() }, { doc: "Set when Check ended in a condition's error (missing parameters, say) rather than an answer" }),
  ),
});

/** The input of one explained check (the subject is added by each operation). */
export const EXPLAIN_FIELDS = {
  relation: s.string({ minLength: 1, maxLength: 64 }),
  object: s.string({ minLength: 1, maxLength: 256, doc: '`type:id`' }),
  contextual_tuples: s.optional(s.list(CONTEXTUAL_TUPLE, { maxItems: 100, doc: 'Tuples for this one check; never persisted' })),
  context: CONTEXT,
  consistency_token: CONSISTENCY_TOKEN,
};

export const PERMISSION_OPERATIONS = [
  defineOperation({
    name: 'check_permissions',
    admin: false,
    kind: 'query',
    auth: 'user',
    rest: { method: 'POST', path: '/v1/check_permissions' },
    grpc: { method: 'CheckPermissions' },
    protocols: ALL_PROTOCOLS,
    input: s.object('CheckPermissionsRequest', {
      checks: s.list(CHECK_INPUT, { minItems: 1, maxItems: 100, doc: '1 to 100 checks, answered in order' }),
      user: SUBJECT,
      consistency_token: CONSISTENCY_TOKEN,
    }, { graphql: { name: 'CheckPermissionsInput' } }),
    output: s.object('CheckPermissionsResponse', { results: s.list(CHECK_RESULT) }),
    doc: 'Checks relations of the caller (or, for a super-admin, of `user`) on objects; results in request order.',
  }),
  defineOperation({
    name: 'explain_permission',
    admin: false,
    kind: 'query',
    auth: 'user',
    rest: { method: 'POST', path: '/v1/explain_permission' },
    grpc: { method: 'ExplainPermission' },
    protocols: ALL_PROTOCOLS,
    input: s.object('ExplainPermissionRequest', { ...EXPLAIN_FIELDS, user: SUBJECT }, { graphql: { name: 'ExplainPermissionInput' } }),
    output: EXPLAIN_RESULT,
    doc: "Why the caller (or, for a super-admin, `user`) holds or lacks a relation on an object: Check's answer, with one witness path when allowed and the tree of failed branches when denied.",
  }),
  defineOperation({
    name: 'list_permissions',
    admin: false,
    kind: 'query',
    auth: 'user',
    rest: { method: 'POST', path: '/v1/list_permissions' },
    grpc: { method: 'ListPermissions' },
    protocols: ALL_PROTOCOLS,
    input: s.object('ListPermissionsRequest', {
      relation: s.optional(s.string({ maxLength: 64 })),
      object_type: s.optional(s.string({ maxLength: 64 })),
      user: SUBJECT,
      context: CONTEXT,
      consistency_token: CONSISTENCY_TOKEN,
      page_size: s.optional(s.int({ min: 1, max: 1000, doc: 'Entries per page (1 to 1000): every page of a walk answers at the revision of its first page, with no entry twice and none missed' })),
      continuation_token: s.optional(s.string({ maxLength: 4096, doc: 'The continuation_token of the page before' })),
    }, { graphql: { name: 'ListPermissionsInput' } }),
    output: s.object('ListPermissionsResponse', {
      objects: s.list(s.string()),
      permissions: s.list(s.object('Permission', { object: s.string(), relation: s.string() })),
      truncated: s.bool({ doc: 'True when more entries exist than this page holds (kept for clients that predate continuation_token)' }),
      // After truncated: protobuf field numbers follow this order, and the existing fields keep theirs.
      undecided_permissions: s.list(
        s.object('UndecidedPermission', {
          object: s.string(),
          relation: s.string(),
          missing_parameters: s.list(s.string(), { doc: 'Condition parameters that context lacked' }),
        }),
        { doc: 'Grants behind a condition that lacked parameters in context (or no context was given): neither allowed nor listed in permissions; call again with those parameters in context to decide them' },
      ),
      continuation_token: s.string({ doc: 'Continues the listing from where this page stopped (empty when it is complete); truncated is true exactly when it is not empty' }),
      deadline_exceeded: s.bool({ doc: 'True when the page stopped for the listing deadline (10 s): it holds what was found in time, possibly fewer entries than page_size or none, and continuation_token continues it' }),
    }, { graphql: { nullable: ['continuation_token'] } }),
    doc: 'Every (object, relation) the subject holds, narrowed by relation and object_type, in pages (page_size, continuation_token; 1000 entries without page_size) that answer at the revision of the first page. A grant whose condition lacks parameters in context is not listed but reported in undecided_permissions.',
  }),
  defineOperation({
    name: 'list_relations',
    admin: false,
    kind: 'query',
    auth: 'user',
    rest: { method: 'POST', path: '/v1/list_relations' },
    grpc: { method: 'ListRelations' },
    protocols: ALL_PROTOCOLS,
    input: s.object('ListRelationsRequest', {
      object: s.string({ minLength: 1, maxLength: 256, doc: '`type:id`' }),
      user: SUBJECT,
      context: CONTEXT,
      consistency_token: CONSISTENCY_TOKEN,
    }, { graphql: { name: 'ListRelationsInput' } }),
    output: s.object('ListRelationsResponse', {
      relations: s.list(s.string(), { doc: "The relations of the object's type the subject holds on it, in the model's order" }),
    }),
    doc: "Every relation the caller (or, for a super-admin, `user`) holds on `object` (\"what may I do here\"). A relation behind a condition whose parameters `context` lacks is not listed.",
  }),
] as const;
