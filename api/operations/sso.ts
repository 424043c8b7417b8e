/**
 * Enterprise sign-in connections (docs/sso.md): SAML 2.0 and OpenID Connect
 * identity providers of an organization. Each row is authorized by the
 * check `can_update` on the connection's organization (its admins and
 * owners) and has a super-admin variant (GraphQL `_<name>`, REST
 * `/v1/admin/<name>`, the `LatchkeyAdmin` gRPC service) that acts on any
 * organization.
 */
import { MESSAGE, s } from '../shape.ts';
import { PAGINATION, PAGINATION_INPUT } from './admin_shapes.ts';
import { defineOperation } from './types.ts';
import { userRow, withAdminVariants } from './org_rows.ts';

const ID = (doc: string) => s.string({ minLength: 1, maxLength: 64, doc });
const OPT = (max: number, doc: string) => s.optional(s.string({ maxLength: max, doc }));
/** Multi-line text (XML, PEM). */
const TEXT = (max: number, doc: string) => s.optional(s.string({ maxLength: max, text: true, doc }));

const MAPPING = s.object('SsoAttributeMapping', {
  email: s.string({ doc: 'The attribute (SAML) or claim (OIDC) holding the email address' }),
  given_name: s.string(),
  family_name: s.string(),
  groups: s.string({ doc: 'The attribute or claim holding the groups (a list)' }),
});

const GROUP_RULE = s.object('SsoGroupRule', {
  group: s.string({ doc: 'A group name as the identity provider sends it' }),
  team_id: s.optional(s.string({ doc: 'The team its members join' })),
  role: s.optional(s.string({ doc: 'The organization role its members get' })),
});

const SAML_OUT = s.object('SsoSamlSettings', {
  idp_entity_id: s.string(),
  idp_sso_url: s.string(),
  idp_slo_url: s.optional(s.string()),
  idp_metadata_url: s.optional(s.string()),
  idp_certificates: s.list(s.string(), { doc: 'The IdP signing certificates (base64 DER)' }),
  sign_requests: s.bool(),
  sp_entity_id: s.string({ doc: 'Our entity id (the audience the IdP must name)' }),
  sp_acs_url: s.string({ doc: 'The Assertion Consumer Service URL (HTTP-POST)' }),
  sp_metadata_url: s.string(),
});

const OIDC_OUT = s.object('SsoOidcSettings', {
  issuer: s.string(),
  client_id: s.string(),
  scopes: s.list(s.string()),
  client_secret_set: s.bool({ doc: 'Whether a client secret is stored (it is never answered)' }),
  redirect_uri: s.string({ doc: 'The redirect URI to register at the provider' }),
});

const CONNECTION = s.object('SsoConnection', {
  id: s.string(),
  organization_id: s.string(),
  type: s.string({ doc: 'saml or oidc' }),
  name: s.string(),
  enabled: s.bool(),
  domains: s.list(s.string(), { doc: 'Verified domains of the organization whose addresses it signs in' }),
  default_role: s.optional(s.string({ doc: 'The role of members it creates (absent: the organization\'s default role)' })),
  attribute_mapping: MAPPING,
  group_mapping: s.list(GROUP_RULE),
  saml: s.optional(SAML_OUT),
  oidc: s.optional(OIDC_OUT),
  sign_in_url: s.string({ doc: 'Where a browser starts signing in with it (/sso/<id>)' }),
  created_at: s.int({ doc: 'Unix seconds' }),
  updated_at: s.int({ doc: 'Unix seconds' }),
});

const SAML_IN = s.optional(s.object('SsoSamlSettingsInput', {
  idp_metadata_xml: TEXT(262_144, 'The IdP metadata XML (entity id, SSO URL and certificates are read from it)'),
  idp_metadata_url: OPT(2048, 'Where to fetch the IdP metadata'),
  idp_entity_id: OPT(1024, 'The IdP entity id (Issuer)'),
  idp_sso_url: OPT(2048, 'The IdP single sign-on URL (HTTP-Redirect binding)'),
  idp_slo_url: OPT(2048, 'The IdP single logout URL'),
  idp_certificate: TEXT(16_384, 'The IdP signing certificate (PEM)'),
  sign_requests: s.optional(s.bool({ doc: 'Sign AuthnRequests (needs sp_private_key and sp_certificate)' })),
  sp_private_key: TEXT(16_384, 'The PEM private key that signs AuthnRequests (never answered)'),
  sp_certificate: TEXT(16_384, 'Its certificate (PEM), published in the SP metadata'),
}));

const OIDC_IN = s.optional(s.object('SsoOidcSettingsInput', {
  issuer: OPT(1024, 'The issuer (its discovery document is fetched)'),
  client_id: OPT(512, 'The client id registered at the provider'),
  client_secret: OPT(1024, 'The client secret (never answered)'),
  scopes: s.optional(s.list(s.string({ maxLength: 128 }), { maxItems: 20, doc: 'Scopes (openid is always asked)' })),
}));

const MUTABLE = {
  name: OPT(256, 'A name to tell connections apart'),
  enabled: s.optional(s.bool({ doc: 'A disabled connection signs nobody in (default true)' })),
  domains: s.optional(s.list(s.string({ maxLength: 253 }), { maxItems: 50, doc: 'Verified domains of the organization' })),
  default_role: OPT(64, 'The role of members it creates (not owner; empty: the organization\'s default)'),
  attribute_mapping: s.optional(s.json({ doc: 'Attribute or claim names: {email, given_name, family_name, groups}' })),
  group_mapping: s.optional(s.json({ doc: 'A list of {group, team_id?, role?}' })),
  saml: SAML_IN,
  oidc: OIDC_IN,
};

const user = userRow;

const MANAGEMENT = [
  defineOperation({
    ...user('add_sso_connection', 'AddSsoConnection'),
    kind: 'mutation',
    input: s.object('AddSsoConnectionRequest', { organization_id: ID('The organization id'), type: s.string({ minLength: 1, maxLength: 8, doc: 'saml or oidc' }), ...MUTABLE }),
    output: CONNECTION,
    doc: 'Adds a SAML 2.0 or OpenID Connect identity provider to an organization, bound to some of its verified domains (check can_update).',
  }),
  defineOperation({
    ...user('sso_connections', 'SsoConnections'),
    kind: 'query',
    input: s.object('SsoConnectionsRequest', { organization_id: ID('The organization id'), pagination: s.optional(PAGINATION_INPUT) }),
    output: s.object('SsoConnectionsResponse', { connections: s.list(CONNECTION), pagination: PAGINATION }),
    doc: 'The organization\'s SSO connections, oldest first; never a secret or a private key (check can_update).',
  }),
  defineOperation({
    ...user('sso_connection', 'SsoConnection'),
    kind: 'query',
    input: s.object('SsoConnectionRequest', { connection_id: ID('The connection id') }),
    output: CONNECTION,
    doc: 'One SSO connection (check can_update on its organization).',
  }),
  defineOperation({
    ...user('update_sso_connection', 'UpdateSsoConnection'),
    kind: 'mutation',
    input: s.object('UpdateSsoConnectionRequest', { connection_id: ID('The connection id'), ...MUTABLE }),
    output: CONNECTION,
    doc: 'Changes an SSO connection; fields left out keep their value (check can_update on its organization).',
  }),
  defineOperation({
    ...user('delete_sso_connection', 'DeleteSsoConnection'),
    kind: 'mutation',
    input: s.object('DeleteSsoConnectionRequest', { connection_id: ID('The connection id') }),
    output: MESSAGE,
    doc: 'Deletes an SSO connection: its sign-in and SAML endpoints answer not found from then on (check can_update on its organization).',
  }),
] as const;

export const SSO_OPERATIONS = withAdminVariants(MANAGEMENT);
