/**
 * The wire shapes of the admin operations (records of the authorizer
 * contract: User, VerificationRequest, Webhook, WebhookLog, EmailTemplate,
 * AuditLog, FGA tuples and models, admin meta, pagination).
 */
import { s } from '../shape.ts';
import { META } from './meta.ts';

/** The largest page a listing answers; the admin service refuses larger ones with its own bound, and test/api/pagination_bound.test.ts holds the two equal. */
export const MAX_PAGE_LIMIT = 100;

export const PAGINATION_INPUT = s.object('PaginationInput', {
  page: s.optional(s.int({ min: 1, doc: 'Page number, from 1 (default 1)' })),
  limit: s.optional(s.int({ min: 1, max: MAX_PAGE_LIMIT, doc: `Page size, 1 to ${MAX_PAGE_LIMIT} (default 10)` })),
}, { graphql: { name: 'PaginationRequest' } });

/** `{pagination}`: the request of the paginated admin lists (GraphQL: Authorizer's `PaginatedRequest`). */
export const PAGINATED = { graphql: { name: 'PaginatedRequest' } } as const;

export const PAGINATION = s.object('Pagination', {
  page: s.int(),
  limit: s.int(),
  offset: s.int(),
  total: s.int(),
});

/** The public User (never the password hash). */
export const USER = s.object(
  'User',
  {
    id: s.string(),
    email: s.optional(s.string()),
    email_verified: s.bool(),
    signup_methods: s.string(),
    given_name: s.optional(s.string()),
    family_name: s.optional(s.string()),
    middle_name: s.optional(s.string()),
    nickname: s.optional(s.string()),
    preferred_username: s.optional(s.string()),
    gender: s.optional(s.string()),
    birthdate: s.optional(s.string()),
    phone_number: s.optional(s.string()),
    phone_number_verified: s.bool(),
    picture: s.optional(s.string()),
    roles: s.list(s.string()),
    created_at: s.int({ doc: 'Unix seconds' }),
    updated_at: s.int({ doc: 'Unix seconds' }),
    revoked_timestamp: s.optional(s.int({ doc: 'Unix seconds; set by revoke_access, cleared by enable_access' })),
    is_multi_factor_auth_enabled: s.optional(s.bool()),
    app_data: s.optional(s.json()),
    locale: s.optional(s.string({ doc: 'The preferred language, a BCP 47 tag (the OpenID Connect `locale` claim); it picks the language of /app, /app/account, mails and SMS after ui_locales' })),
  },
  { doc: 'A user account', graphql: { scalars: { id: 'ID', app_data: 'Map' }, nullable: ['created_at', 'updated_at'] } },
);

export const VERIFICATION_REQUEST = s.object('VerificationRequest', {
  id: s.string(),
  identifier: s.string({ doc: 'The kind: basic_auth_signup, forgot_password, magic_link_login, invite_member, ...' }),
  token: s.optional(s.string({ doc: 'Always null: only a digest of the token is stored, so a live link cannot be read back' })),
  email: s.string(),
  expires: s.int(),
  created_at: s.int(),
  updated_at: s.int(),
  nonce: s.string(),
  redirect_uri: s.string(),
}, { graphql: { scalars: { id: 'ID' }, nullable: { except: ['id'] } } });

export const WEBHOOK = s.object('Webhook', {
  id: s.string(),
  event_name: s.string(),
  event_description: s.string(),
  endpoint: s.string(),
  headers: s.map(),
  enabled: s.bool(),
  created_at: s.int(),
  updated_at: s.int(),
}, { graphql: { scalars: { id: 'ID' }, nullable: { except: ['id'] } } });

export const WEBHOOK_LOG = s.object('WebhookLog', {
  id: s.string(),
  webhook_id: s.string(),
  delivery_id: s.string({ doc: 'The delivery (webhook-id header) this attempt belongs to' }),
  event_name: s.string(),
  attempt: s.int(),
  http_status: s.int({ doc: '0 when no response arrived or the address was refused' }),
  duration_ms: s.int(),
  outcome: s.string({ doc: 'delivered, failed or refused' }),
  error: s.string(),
  request: s.string(),
  response: s.string({ doc: 'Response text, capped' }),
  created_at: s.int(),
  updated_at: s.int(),
}, { graphql: { scalars: { id: 'ID', webhook_id: 'ID' }, nullable: ['webhook_id', 'http_status', 'request', 'response', 'created_at', 'updated_at'] } });

export const EMAIL_TEMPLATE = s.object('EmailTemplate', {
  id: s.string(),
  event_name: s.string(),
  subject: s.string(),
  template: s.string(),
  design: s.string(),
  created_at: s.int(),
  updated_at: s.int(),
  language: s.string({ doc: 'The language the template is for; empty: every language' }),
}, { graphql: { scalars: { id: 'ID' }, nullable: ['created_at', 'updated_at'] } });

export const AUDIT_LOG = s.object('AuditLog', {
  id: s.string(),
  actor_id: s.string(),
  actor_type: s.string(),
  actor_email: s.string(),
  action: s.string(),
  resource_type: s.string(),
  resource_id: s.string(),
  ip_address: s.string(),
  user_agent: s.string(),
  metadata: s.string({ doc: 'JSON text' }),
  created_at: s.int(),
}, { graphql: { scalars: { id: 'ID' }, nullable: { except: ['id'] } } });

/** A tuple's condition as written: the condition's name and the part of its parameters stored with the tuple. */
export const TUPLE_CONDITION_INPUT = s.object('TupleConditionInput', {
  name: s.string({ minLength: 1, maxLength: 256, doc: 'Name of a condition of the model' }),
  context: s.optional(s.json({ doc: 'Parameter values stored with the tuple (a JSON object); they win over a request context on a clash' })),
});
export const TUPLE_CONDITION = s.object('TupleCondition', { name: s.string(), context: s.optional(s.json({ doc: 'Stored parameter values (a JSON object)' })) });
/** A tuple's `expires_at` as written (one GraphQL input type, `FgaTupleInput`, serves written and contextual tuples). */
export const TUPLE_EXPIRES_AT_INPUT = s.optional(s.string({ maxLength: 40, doc: 'RFC 3339 timestamp, in the future, from which a written tuple grants nothing (ignored on deletes; refused on contextual tuples, which hold for one request)' }));
export const FGA_TUPLE = s.object('FgaTuple', {
  user: s.string(),
  relation: s.string(),
  object: s.string(),
  condition: s.optional(TUPLE_CONDITION),
  expires_at: s.optional(s.string({ doc: 'When the tuple stops granting (RFC 3339, UTC); absent when it never expires' })),
});
export const FGA_TUPLE_INPUT = s.object('FgaTupleInput', {
  user: s.string({ minLength: 1 }),
  relation: s.string({ minLength: 1 }),
  object: s.string({ minLength: 1 }),
  condition: s.optional(TUPLE_CONDITION_INPUT),
  expires_at: TUPLE_EXPIRES_AT_INPUT,
});
export const FGA_MODEL = s.object('FgaModel', { id: s.string(), dsl: s.string() });

export const ADMIN_META = s.object(
  'AdminMeta',
  {
    ...META.fields,
    server_version: s.string({ doc: 'Version of this server' }),
    roles: s.list(s.string()),
    default_roles: s.list(s.string()),
    protected_roles: s.list(s.string()),
    is_fga_enabled: s.bool(),
    is_email_service_enabled: s.bool(),
    is_admin_header_auth_enabled: s.bool(),
    webhook_events: s.list(s.string()),
    email_template_events: s.list(s.string()),
  },
  { doc: 'Meta plus admin-only fields' },
);
