/**
 * The account center's operations: the caller's sessions and devices
 * (`list_sessions`, `revoke_session`) and sign-in methods
 * (`linked_identities`, `unlink_identity`), and a super-admin's view of any
 * user's sessions (`_list_sessions`, `_revoke_session`). Served over
 * GraphQL, REST and gRPC alike.
 */
import { EMPTY, MESSAGE, s } from '../shape.ts';
import { ALL_PROTOCOLS, defineOperation } from './types.ts';

/** One live session with the device it was opened and last refreshed from. */
export const SESSION_INFO = s.object(
  'SessionInfo',
  {
    id: s.string({ doc: 'The session id (the `sid` claim of its tokens); pass it to revoke_session' }),
    browser: s.string({ doc: 'A label of the browser and system from the user agent, e.g. "Firefox on Linux"' }),
    user_agent: s.string({ doc: 'The User-Agent of the request that last opened or refreshed the session (empty when unknown)' }),
    ip: s.string({ doc: 'The client IP of that request (empty when unknown)' }),
    login_method: s.string({ doc: 'How the session was opened: basic_auth, magic_link_login, google, oidc, ...' }),
    first_seen_at: s.int({ doc: 'Unix seconds: when the session was opened' }),
    last_seen_at: s.int({ doc: 'Unix seconds: when it was last opened or refreshed' }),
    current: s.bool({ doc: 'True for the session of this call' }),
  },
  { doc: 'A live session and its device' },
);

const SESSIONS = s.object('SessionsResponse', { sessions: s.list(SESSION_INFO, { doc: 'Most recently seen first, at most 200' }) });

const REVOKED = s.object('RevokeSessionResponse', {
  message: s.string(),
  revoked: s.int({ doc: 'How many sessions were ended' }),
});

const SESSION_ID = s.string({ minLength: 1, maxLength: 64, doc: 'A session id from list_sessions' });

const LINKED = s.object(
  'LinkedIdentitiesResponse',
  {
    identities: s.list(
      s.object('LinkedIdentity', {
        provider: s.string({ doc: 'google, github, ..., or oidc for the generic OpenID Connect provider' }),
        display_name: s.string({ doc: 'The provider as shown to users (--oidc-display-name for oidc)' }),
        email: s.optional(s.string({ doc: 'The address the provider reported for the linked account when last linked or used (null when it shared none or was linked before identities were recorded)' })),
        linked_at: s.optional(s.int({ doc: 'Unix seconds: when the provider account was linked (null when linked before identities were recorded)' })),
      }),
      { doc: 'The providers this account signs in with, in the order they were linked' },
    ),
    has_password: s.bool({ doc: 'Whether the account has a password' }),
  },
  { doc: "The account's sign-in methods" },
);

const CONSENTED = s.object('ConsentedAppsResponse', {
  apps: s.list(
    s.object('ConsentedApp', {
      client_id: s.string(),
      client_name: s.string({ doc: 'The client as registered (its id when it no longer exists)' }),
      scopes: s.list(s.string(), { doc: 'The scopes granted, every consent to this client together' }),
      granted_at: s.int({ doc: 'Unix seconds: first granted' }),
    }),
    { doc: 'The clients that are not first-party the caller has allowed, first granted first' },
  ),
});

const user = <const N extends string>(name: N, grpc: string, kind: 'query' | 'mutation') =>
  ({ name, kind, auth: 'user', admin: false, rest: { method: 'POST', path: `/v1/${name}` }, grpc: { method: grpc }, protocols: ALL_PROTOCOLS }) as const;

export const ACCOUNT_OPERATIONS = [
  defineOperation({
    ...user('list_sessions', 'ListSessions', 'query'),
    input: EMPTY,
    output: SESSIONS,
    doc: "The caller's live sessions, each with its browser, IP, first and last seen, and whether it is the current one.",
  }),
  defineOperation({
    ...user('revoke_session', 'RevokeSession', 'mutation'),
    input: s.object('RevokeSessionRequest', {
      id: s.optional(SESSION_ID),
      all_others: s.optional(s.bool({ doc: 'End every session of the caller but the current one' })),
    }),
    output: REVOKED,
    doc:
      "Ends one of the caller's sessions (id) or all the others (all_others: true); its cookie and every token issued in it are refused from the next call, " +
      'on every replica. A session that is not the caller\'s is not_found session_not_found.',
  }),
  defineOperation({
    ...user('linked_identities', 'LinkedIdentities', 'query'),
    input: EMPTY,
    output: LINKED,
    doc: "The caller's sign-in methods: the social and OpenID Connect providers linked to the account, and whether it has a password.",
  }),
  defineOperation({
    ...user('consented_apps', 'ConsentedApps', 'query'),
    input: EMPTY,
    output: CONSENTED,
    doc: "The caller's remembered consents: the clients that are not first-party (require_consent) the caller has allowed, with the scopes granted.",
  }),
  defineOperation({
    ...user('revoke_consent', 'RevokeConsent', 'mutation'),
    input: s.object('RevokeConsentRequest', { client_id: s.string({ minLength: 1, maxLength: 128, doc: 'A client_id from consented_apps' }) }),
    output: MESSAGE,
    doc: "Forgets the caller's consent to a client: its next authorization request asks again. Tokens already issued to it stay valid until they expire or are revoked. not_found consent_not_found when there is none.",
  }),
  defineOperation({
    ...user('unlink_identity', 'UnlinkIdentity', 'mutation'),
    input: s.object('UnlinkIdentityRequest', { provider: s.string({ minLength: 1, maxLength: 32, doc: 'The provider to unlink (google, github, ..., oidc)' }) }),
    output: MESSAGE,
    doc:
      "Unlinks a provider from the caller's account, with its provider accounts (which then no longer sign in here by their subject), and ends the other sessions it opened; " +
      'refused (failed_precondition last_sign_in_method) when it is the only way left to sign in. ' +
      "A later sign-in with the provider's verified address of the account links it again; the account center's Connect links one whatever its address.",
  }),
  defineOperation({
    name: 'admin_list_sessions',
    graphql: '_list_sessions',
    kind: 'query',
    auth: 'super_admin',
    admin: true,
    rest: { method: 'POST', path: '/v1/admin/list_sessions' },
    grpc: { method: 'ListSessions' },
    protocols: ALL_PROTOCOLS,
    input: s.object('AdminListSessionsRequest', { user_id: s.string({ minLength: 1, maxLength: 64 }) }),
    output: SESSIONS,
    doc: "A user's live sessions with their devices (none is current).",
  }),
  defineOperation({
    name: 'admin_revoke_session',
    graphql: '_revoke_session',
    kind: 'mutation',
    auth: 'super_admin',
    admin: true,
    rest: { method: 'POST', path: '/v1/admin/revoke_session' },
    grpc: { method: 'RevokeSession' },
    protocols: ALL_PROTOCOLS,
    input: s.object('AdminRevokeSessionRequest', { id: SESSION_ID }),
    output: REVOKED,
    doc: "Ends any user's session by id; its cookie and tokens are refused from the next call.",
  }),
] as const;
