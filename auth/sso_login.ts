/**
 * Signing in through an organization's connection (docs/sso.md): the
 * SP-initiated start at `/sso/<id>`, the SAML Assertion Consumer Service and
 * IdP-initiated SSO, and what follows a verified assertion (just-in-time
 * provisioning, then the session as after any other login). HTTP is the wire
 * layer's (transports/web/sso.ts); the SAML protocol is auth/saml_sp.ts's.
 *
 * An SP-initiated login keeps its state under an opaque single-use handle in
 * the shared memory store (10 minutes): the connection, the id of the
 * AuthnRequest, where the browser goes after. The handle is the RelayState
 * and is bound to the browser by a cookie, so that a response carrying the
 * `InResponseTo` of a login is accepted only in the browser that started it.
 * Each accepted assertion's ID is kept in the store until it expires: the
 * second presentation of an assertion is refused (`saml_assertion_replayed`),
 * on every instance that shares the store.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { LatchkeyError } from '../engine/errors.ts';
import type { AuthService } from './auth_service.ts';
import type { MemoryStore } from './memory_store.ts';
import type { OrgCall } from './organizations.ts';
import type { AuthResult } from './public_user.ts';
import { authorizeUrl, mapAttributes, SAML_REQUEST_TTL_SECONDS, spMetadata, verifyLogoutRequest, verifyResponse, type RequestIdCache, type SamlEndpoints } from './saml_sp.ts';
import type { SsoService } from './sso_connections.ts';
import { claimList, OidcConnections, type OidcLoginState } from './sso_oidc.ts';
import type { SsoConnectionRecord } from './sso_store.ts';
import type { UserRecord } from './user_store_types.ts';

export interface SsoLoginOptions {
  auth: AuthService;
  connections: SsoService;
  store: MemoryStore;
  /** The server's redirect rule (`--allowed-origins`); throws `invalid_argument` `invalid_redirect_uri`. */
  checkRedirectUri: (uri: string) => URL;
  /** Where the browser goes when the start names no redirect_uri (the sign-in page). */
  defaultRedirectUri: string;
  /** Milliseconds since the epoch. */
  now: () => number;
}

/** What a start answers: where the browser goes, and the handle the wire layer binds to it. */
export interface SsoStart {
  location: string;
  state: string;
  /** Where the state cookie goes: `/saml/` (the ACS) or `/sso/` (the OIDC callback). */
  cookiePath: string;
}

/** The outcome of an assertion: where to send the browser and the session (or the refusal). */
export interface SsoFinish {
  redirectUri: string;
  clientState: string | undefined;
  connection: SsoConnectionRecord;
  result?: AuthResult;
  user?: UserRecord;
  created?: boolean;
  /** A test run (`/sso/<id>?test=1`): the claims received, and no session. */
  claims?: Record<string, unknown>;
  error?: LatchkeyError;
}

interface StateRecord {
  connection_id: string;
  /** SAML: the AuthnRequest's ID. */
  request_id: string;
  /** OIDC: the PKCE verifier and the nonce. */
  oidc?: OidcLoginState;
  redirect_uri: string;
  client_state?: string;
  test?: boolean;
}

const STATE_KEY = (handle: string): string => `sso_state:${createHash('sha256').update(handle).digest('base64url')}`;
const invalidState = (): LatchkeyError => new LatchkeyError('unauthenticated', 'the SAML response does not answer a sign-in started in this browser; start again', { reason: 'sso_state_invalid' });

function single(v: unknown): string | undefined {
  return typeof v === 'string' && v.length > 0 ? v : undefined;
}

export class SsoLogin {
  readonly #o: SsoLoginOptions;
  readonly #oidc: OidcConnections;

  constructor(options: SsoLoginOptions) {
    this.#o = options;
    this.#oidc = new OidcConnections(options.now);
  }

  get connections(): SsoService {
    return this.#o.connections;
  }

  #endpoints(id: string): SamlEndpoints {
    const base = this.#o.connections.publicUrl;
    return { entityId: `${base}/saml/${id}/metadata`, acsUrl: `${base}/saml/${id}/acs`, sloUrl: `${base}/saml/${id}/slo` };
  }

  /** The ids of one connection's AuthnRequests, in the shared store (a response to another connection's request finds nothing here). */
  #requestCache(connectionId: string): RequestIdCache {
    const key = (id: string) => `saml_request:${connectionId}:${id}`;
    const store = this.#o.store;
    return {
      save: (id, value) => store.set(key(id), value, SAML_REQUEST_TTL_SECONDS),
      get: (id) => store.get(key(id)),
      remove: async (id) => void (await store.del(key(id))),
    };
  }

  /** `/saml/<id>/metadata`: the SP metadata of an enabled SAML connection. */
  async metadata(id: string): Promise<string> {
    const { connection } = await this.#o.connections.usable(id);
    if (connection.saml === null) throw new LatchkeyError('not_found', 'not a SAML connection', { reason: 'sso_connection_not_found' });
    return spMetadata(connection.saml, this.#endpoints(connection.id));
  }

  /**
   * `/sso/<id>`: starts signing in with the connection (SAML: an AuthnRequest
   * by the HTTP-Redirect binding). `redirect_uri` (default: the sign-in page)
   * passes the server's redirect rule; `state` is echoed back; `test=1` runs
   * the flow to show the claims received without signing in (an admin's
   * test button). Throws `not_found` or `invalid_argument`.
   */
  async begin(id: string, query: Readonly<Record<string, unknown>>): Promise<SsoStart> {
    const { connection } = await this.#o.connections.usable(id);
    const redirectUri = this.#o.checkRedirectUri(single(query['redirect_uri']) ?? this.#o.defaultRedirectUri).toString();
    const clientState = single(query['state']);
    if (clientState !== undefined && clientState.length > 1024) throw new LatchkeyError('invalid_argument', 'state is too long', { reason: 'invalid_field', details: { field: 'state' } });
    const handle = randomBytes(32).toString('base64url');
    if (connection.oidc !== null) {
      const { location, login } = await this.#oidc.begin(connection.oidc, this.#o.connections.oidcRedirectUri(connection.id), handle);
      const record: StateRecord = { connection_id: connection.id, request_id: '', oidc: login, redirect_uri: redirectUri };
      if (clientState !== undefined) record.client_state = clientState;
      if (query['test'] === '1' || query['test'] === 'true') record.test = true;
      await this.#o.store.set(STATE_KEY(handle), JSON.stringify(record), SAML_REQUEST_TTL_SECONDS);
      return { location, state: handle, cookiePath: '/sso/' };
    }
    if (connection.saml === null) throw new LatchkeyError('not_found', 'no enabled SSO connection with this id', { reason: 'sso_connection_not_found' });
    // An NCName (SAML 2.0 Core §1.3.4): a letter first.
    const requestId = `_${randomBytes(20).toString('hex')}`;
    const record: StateRecord = { connection_id: connection.id, request_id: requestId, redirect_uri: redirectUri };
    if (clientState !== undefined) record.client_state = clientState;
    if (query['test'] === '1' || query['test'] === 'true') record.test = true;
    await this.#o.store.set(STATE_KEY(handle), JSON.stringify(record), SAML_REQUEST_TTL_SECONDS);
    const location = await authorizeUrl(connection.saml, this.#endpoints(connection.id), this.#requestCache(connection.id), handle, requestId, this.#o.now);
    return { location, state: handle, cookiePath: '/saml/' };
  }

  /**
   * `/sso/<id>/callback`: the OIDC provider's redirect. The state must be the
   * browser's and unused (`sso_state_invalid`, thrown: nowhere to send the
   * browser); then the code is exchanged, the ID token verified, the claims
   * mapped, the user provisioned and the session opened (failures come back
   * as `error`).
   */
  async finishOidc(id: string, query: Readonly<Record<string, unknown>>, browserState: string | undefined, presentedSession: string | undefined, call: OrgCall): Promise<SsoFinish> {
    const { connection, org } = await this.#o.connections.usable(id);
    if (connection.oidc === null) throw new LatchkeyError('not_found', 'not an OpenID Connect connection', { reason: 'sso_connection_not_found' });
    const state = single(query['state']);
    if (state === undefined || browserState === undefined) throw invalidState();
    const a = Buffer.from(state);
    const b = Buffer.from(browserState);
    if (a.length !== b.length || !timingSafeEqual(a, b)) throw invalidState();
    const raw = await this.#o.store.get(STATE_KEY(state));
    if (raw === undefined || (await this.#o.store.del(STATE_KEY(state))) !== 1) throw invalidState();
    const record = JSON.parse(raw) as StateRecord;
    if (record.connection_id !== connection.id || record.oidc === undefined) throw invalidState();
    const out: SsoFinish = { redirectUri: record.redirect_uri, clientState: record.client_state, connection };
    try {
      const providerError = single(query['error']);
      if (providerError !== undefined) throw new LatchkeyError('permission_denied', `the organization's OpenID provider refused the sign-in (${providerError.slice(0, 64)})`, { reason: 'sso_oidc_denied' });
      const code = single(query['code']);
      if (code === undefined) throw new LatchkeyError('unauthenticated', 'the OpenID provider sent no authorization code', { reason: 'sso_oidc_failed' });
      const claims = await this.#oidc.finish(connection.oidc, this.#o.connections.oidcRedirectUri(connection.id), code, record.oidc);
      const m = connection.attribute_mapping;
      const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);
      const mapped = { email: str(claims[m.email]), givenName: str(claims[m.given_name]), familyName: str(claims[m.family_name]), groups: claimList(claims[m.groups]) };
      if (record.test === true) {
        out.claims = { id_token: claims, mapped: { email: mapped.email ?? null, given_name: mapped.givenName ?? null, family_name: mapped.familyName ?? null, groups: mapped.groups } };
        return out;
      }
      // A provider that says the address is unverified does not vouch for it.
      if (claims['email_verified'] === false) throw new LatchkeyError('permission_denied', 'the OpenID provider says this email address is not verified', { reason: 'unverified_provider_email' });
      const { user, created } = await this.#o.connections.provision(call, connection, org, { ...mapped, subject: String(claims['sub']) });
      out.user = user;
      out.created = created;
      out.result = await this.#open(user, connection, presentedSession);
    } catch (err) {
      if (!(err instanceof LatchkeyError) || err.code === 'internal') out.error = new LatchkeyError('internal', 'sign-in failed', { reason: 'sso_login_failed', cause: err });
      else out.error = err;
    }
    return out;
  }

  /**
   * `/saml/<id>/acs`: verifies the posted `SAMLResponse` for this connection
   * (auth/saml_sp.ts), binds an answer to a request to the browser that
   * started it, refuses a replayed assertion, provisions the user and opens
   * the session. A refusal before the connection is known throws; after, it
   * comes back as `error` with where to send the browser.
   */
  async finishSaml(id: string, body: Readonly<Record<string, unknown>>, browserState: string | undefined, presentedSession: string | undefined, call: OrgCall): Promise<SsoFinish> {
    const { connection, org } = await this.#o.connections.usable(id);
    if (connection.saml === null) throw new LatchkeyError('not_found', 'not a SAML connection', { reason: 'sso_connection_not_found' });
    const out: SsoFinish = { redirectUri: this.#o.checkRedirectUri(this.#o.defaultRedirectUri).toString(), clientState: undefined, connection };
    try {
      const samlResponse = single(body['SAMLResponse']);
      if (samlResponse === undefined) throw new LatchkeyError('invalid_argument', 'SAMLResponse is required', { reason: 'saml_response_invalid' });
      const relayState = single(body['RelayState']);
      const assertion = await verifyResponse(connection.saml, this.#endpoints(connection.id), this.#requestCache(connection.id), { SAMLResponse: samlResponse, ...(relayState === undefined ? {} : { RelayState: relayState }) }, this.#o.now);
      let record: StateRecord | undefined;
      if (assertion.inResponseTo !== undefined) {
        // SP-initiated: the RelayState names the login, whose browser and request must be these.
        if (relayState === undefined || browserState === undefined) throw invalidState();
        const a = Buffer.from(relayState);
        const b = Buffer.from(browserState);
        if (a.length !== b.length || !timingSafeEqual(a, b)) throw invalidState();
        const raw = await this.#o.store.get(STATE_KEY(relayState));
        if (raw === undefined || (await this.#o.store.del(STATE_KEY(relayState))) !== 1) throw invalidState();
        record = JSON.parse(raw) as StateRecord;
        if (record.connection_id !== connection.id || record.request_id !== assertion.inResponseTo) throw invalidState();
        out.redirectUri = record.redirect_uri;
        out.clientState = record.client_state;
      }
      // Single use: the first presentation of an assertion sets its key; any later one, here or on another instance, finds it.
      const replayKey = `saml_assertion:${createHash('sha256').update(`${connection.saml.idp_entity_id}\n${assertion.id}`).digest('base64url')}`;
      const ttl = Math.max(60, assertion.notOnOrAfter - Math.floor(this.#o.now() / 1000));
      if (!(await this.#o.store.setIfAbsent(replayKey, '1', ttl))) {
        throw new LatchkeyError('unauthenticated', 'this SAML assertion was used already', { reason: 'saml_assertion_replayed' });
      }
      const mapped = mapAttributes(assertion, connection.attribute_mapping);
      if (record?.test === true) {
        out.claims = { name_id: assertion.nameId, attributes: assertion.attributes, mapped: { email: mapped.email ?? null, given_name: mapped.givenName ?? null, family_name: mapped.familyName ?? null, groups: mapped.groups } };
        return out;
      }
      const { user, created } = await this.#o.connections.provision(call, connection, org, { ...mapped, subject: assertion.nameId });
      out.user = user;
      out.created = created;
      out.result = await this.#open(user, connection, presentedSession);
    } catch (err) {
      if (!(err instanceof LatchkeyError) || err.code === 'internal') out.error = new LatchkeyError('internal', 'sign-in failed', { reason: 'sso_login_failed', cause: err });
      else out.error = err;
    }
    return out;
  }

  /**
   * `/saml/<id>/slo`: a signed LogoutRequest from the IdP ends every session
   * and refresh token of the person it names (an address on one of the
   * connection's domains); answers where to send the LogoutResponse.
   */
  async logout(id: string, query: Readonly<Record<string, unknown>>, originalQuery: string): Promise<{ responseUrl: string | undefined; userId: string | undefined; ended: number }> {
    const { connection } = await this.#o.connections.usable(id);
    if (connection.saml === null) throw new LatchkeyError('not_found', 'not a SAML connection', { reason: 'sso_connection_not_found' });
    const q: Record<string, string> = {};
    for (const k of ['SAMLRequest', 'RelayState', 'SigAlg', 'Signature']) {
      const v = single(query[k]);
      if (v !== undefined) q[k] = v;
    }
    const { nameId, responseUrl } = await verifyLogoutRequest(connection.saml, this.#endpoints(connection.id), q, originalQuery, this.#o.now);
    const email = nameId.trim().toLowerCase();
    const domain = email.slice(email.lastIndexOf('@') + 1);
    const user = email.includes('@') && connection.domains.includes(domain) ? await this.#o.auth.users.findByEmail(email) : undefined;
    const ended = user === undefined ? 0 : await this.#o.auth.endAllSessions(user.id);
    return { responseUrl, userId: user?.id, ended };
  }

  /** Opens the session, or the MFA challenge when the user set up a second factor here (as after any login). */
  async #open(user: UserRecord, connection: SsoConnectionRecord, presentedSession: string | undefined): Promise<AuthResult> {
    const auth = this.#o.auth;
    const loginMethod = connection.type === 'saml' ? 'saml' : 'sso_oidc';
    const method = auth.mfa.methodFor(user);
    const roles = [...user.roles];
    if (method !== undefined) {
      const { response, grant } = await auth.mfa.challenge(user, method, { roles, scope: undefined, loginMethod });
      return { response, mfaSession: grant, record: user };
    }
    return auth.openSessionFor(user.id, { loginMethod, roles, scope: undefined, message: 'Logged in successfully' }, presentedSession === undefined ? {} : { sessionCookie: presentedSession });
  }
}
