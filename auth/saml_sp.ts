/**
 * The SAML 2.0 Service Provider of one connection, on `@node-saml/node-saml`
 * (the only module that imports it; loaded on the first SAML request or
 * SAML connection write, so that a server without SAML pays nothing for it at
 * start).
 *
 * What the library checks (SAML 2.0 Core and Profiles, as it implements
 * them): the XML signature of the assertion by a certificate of the IdP
 * (signed assertions are required, `wantAssertionsSigned`; only the signed
 * references are read, which is what defeats signature wrapping), the
 * `Issuer` against the IdP entity id, `Conditions` `NotBefore` /
 * `NotOnOrAfter` and `SubjectConfirmationData` `NotOnOrAfter` with a bounded
 * clock skew, the `AudienceRestriction` against our entity id, and
 * `InResponseTo` against the requests we issued (kept in the cache this
 * module hands it, the shared memory store).
 *
 * What it does not, and this module adds on the signed assertion it returns:
 * the `Recipient` of the subject confirmation must be this connection's ACS
 * URL, the `Destination` of the response (when present) too, and the
 * assertion must carry an `ID` and a `NotOnOrAfter` at most a day ahead, so
 * that the replay cache (auth/sso_login.ts) holds it for as long as it could
 * be accepted.
 */
import { LatchkeyError } from '../engine/errors.ts';
import type { SamlSettings, SsoAttributeMapping } from './sso_store.ts';

type NodeSaml = typeof import('@node-saml/node-saml');

let loaded: Promise<NodeSaml> | undefined;
function lib(): Promise<NodeSaml> {
  loaded ??= import('@node-saml/node-saml');
  return loaded;
}

/** Seconds of clock difference with the IdP that are tolerated (SAML 2.0 Profiles §4.1.4.3 leaves the bound to the SP). */
export const SAML_CLOCK_SKEW_SECONDS = 90;
/** How long a request id we issued stays answerable. */
export const SAML_REQUEST_TTL_SECONDS = 600;
/** An assertion valid further ahead than this is refused (the replay cache could not outlive it). */
const MAX_ASSERTION_LIFETIME_SECONDS = 86_400;

/** Where the library keeps the ids of the AuthnRequests we issued (the shared memory store, per connection). */
export interface RequestIdCache {
  save(id: string, value: string): Promise<void>;
  get(id: string): Promise<string | undefined>;
  remove(id: string): Promise<void>;
}

export interface SamlEndpoints {
  /** Our entity id: the connection's metadata URL. */
  entityId: string;
  acsUrl: string;
  sloUrl: string;
}

/** What a verified assertion says. */
export interface SamlAssertion {
  /** The assertion's `ID` (the replay cache's key). */
  id: string;
  /** Unix seconds after which it is no longer accepted. */
  notOnOrAfter: number;
  /** The request it answers (SP-initiated), or undefined (IdP-initiated). */
  inResponseTo: string | undefined;
  nameId: string;
  attributes: Record<string, string[]>;
  sessionIndex: string | undefined;
}

const refused = (message: string, r: { reason: string }, cause?: unknown): LatchkeyError =>
  new LatchkeyError('unauthenticated', message, { reason: r.reason, ...(cause === undefined ? {} : { cause }) });

async function samlFor(settings: SamlSettings, endpoints: SamlEndpoints, cache: RequestIdCache, nowMs: () => number, requestId?: string) {
  const { SAML, ValidateInResponseTo } = await lib();
  return new SAML({
    issuer: endpoints.entityId,
    audience: endpoints.entityId,
    callbackUrl: endpoints.acsUrl,
    logoutCallbackUrl: endpoints.sloUrl,
    entryPoint: settings.idp_sso_url,
    ...(settings.idp_slo_url === null ? {} : { logoutUrl: settings.idp_slo_url }),
    idpIssuer: settings.idp_entity_id,
    idpCert: settings.idp_certificates.map((c) => `-----BEGIN CERTIFICATE-----\n${c.match(/.{1,64}/g)!.join('\n')}\n-----END CERTIFICATE-----`),
    wantAssertionsSigned: true,
    // Many IdPs sign the assertion only (Entra ID by default, Okta by choice); the assertion's signature is required.
    wantAuthnResponseSigned: false,
    acceptedClockSkewMs: SAML_CLOCK_SKEW_SECONDS * 1000,
    validateInResponseTo: ValidateInResponseTo.ifPresent,
    requestIdExpirationPeriodMs: SAML_REQUEST_TTL_SECONDS * 1000,
    cacheProvider: {
      saveAsync: async (key: string, value: string) => {
        await cache.save(key, value);
        return { value, createdAt: nowMs() };
      },
      getAsync: async (key: string) => (await cache.get(key)) ?? null,
      removeAsync: async (key: string | null) => {
        if (key !== null) await cache.remove(key);
        return key;
      },
    },
    identifierFormat: 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress',
    disableRequestedAuthnContext: true,
    ...(requestId === undefined ? {} : { generateUniqueId: () => requestId }),
    ...(settings.sign_requests ? { privateKey: settings.sp_private_key, publicCert: settings.sp_certificate, signatureAlgorithm: 'sha256' as const } : {}),
  });
}

/** The SP-initiated start: the IdP URL with the AuthnRequest (HTTP-Redirect binding) and `RelayState`. */
export async function authorizeUrl(settings: SamlSettings, endpoints: SamlEndpoints, cache: RequestIdCache, relayState: string, requestId: string, nowMs: () => number): Promise<string> {
  const saml = await samlFor(settings, endpoints, cache, nowMs, requestId);
  return saml.getAuthorizeUrlAsync(relayState, undefined, {});
}

/** The SP metadata of the connection (entity id, ACS with HTTP-POST, SLO, the signing certificate when requests are signed). */
export async function spMetadata(settings: SamlSettings, endpoints: SamlEndpoints): Promise<string> {
  const saml = await samlFor(settings, endpoints, { save: async () => {}, get: async () => undefined, remove: async () => {} }, Date.now);
  return saml.generateServiceProviderMetadata(null, settings.sign_requests && settings.sp_certificate !== '' ? settings.sp_certificate : null);
}

const attr = (xml: string, element: string, name: string): string | undefined => {
  const m = new RegExp(`<(?:[A-Za-z0-9_.-]+:)?${element}\\b[^>]*?\\s${name}="([^"]*)"`).exec(xml);
  return m === null ? undefined : m[1];
};

const unescapeXml = (s: string): string => s.replace(/&quot;/g, '"').replace(/&apos;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');

/**
 * Verifies an HTTP-POST `SAMLResponse` for this connection and returns its
 * assertion; every refusal is `unauthenticated` with a precise reason
 * (`saml_response_invalid`, `saml_signature_invalid`, `saml_assertion_expired`,
 * `saml_audience_mismatch`, `saml_recipient_mismatch`, `saml_in_response_to_invalid`).
 */
export async function verifyResponse(settings: SamlSettings, endpoints: SamlEndpoints, cache: RequestIdCache, body: Record<string, string>, nowMs: () => number): Promise<SamlAssertion> {
  const saml = await samlFor(settings, endpoints, cache, nowMs);
  let profile;
  try {
    const out = await saml.validatePostResponseAsync(body);
    profile = out.profile;
    if (out.loggedOut || profile === null) throw new Error('not an authentication response');
  } catch (err) {
    // The library reports every refusal as a plain Error with a message and no code, so its message is
    // the only thing to tell the cases apart by; whatever is not recognised stays the generic refusal
    // (saml_response_invalid), never an acceptance. test/features/sso/saml.test.ts pins each mapping.
    const m = err instanceof Error ? err.message : String(err);
    if (/signature/i.test(m)) throw refused('the SAML response is not signed by the identity provider of this connection', { reason: 'saml_signature_invalid' }, err);
    if (/NotBefore|NotOnOrAfter|expired|not yet valid/i.test(m)) throw refused('the SAML assertion is expired or not yet valid', { reason: 'saml_assertion_expired' }, err);
    if (/audience/i.test(m)) throw refused('the SAML assertion is for another service provider (audience)', { reason: 'saml_audience_mismatch' }, err);
    if (/InResponseTo/i.test(m)) throw refused('the SAML response does not answer a request of this connection', { reason: 'saml_in_response_to_invalid' }, err);
    if (/issuer/i.test(m)) throw refused('the SAML response is from another identity provider', { reason: 'saml_issuer_mismatch' }, err);
    throw refused('the SAML response is not valid', { reason: 'saml_response_invalid' }, err);
  }
  // The signed assertion as the library verified it: what is read below is covered by the signature.
  const xml = profile.getAssertionXml?.() ?? '';
  const id = attr(xml, 'Assertion', 'ID');
  if (id === undefined || id === '') throw refused('the SAML assertion has no ID', { reason: 'saml_response_invalid' });
  const recipient = attr(xml, 'SubjectConfirmationData', 'Recipient');
  if (recipient === undefined || unescapeXml(recipient) !== endpoints.acsUrl) throw refused('the SAML assertion is for another recipient', { reason: 'saml_recipient_mismatch' });
  const responseXml = profile.getSamlResponseXml?.() ?? '';
  const destination = attr(responseXml, 'Response', 'Destination');
  if (destination !== undefined && unescapeXml(destination) !== endpoints.acsUrl) throw refused('the SAML response is for another destination', { reason: 'saml_recipient_mismatch' });
  const until = attr(xml, 'Conditions', 'NotOnOrAfter') ?? attr(xml, 'SubjectConfirmationData', 'NotOnOrAfter');
  const untilMs = until === undefined ? Number.NaN : Date.parse(until);
  if (!Number.isFinite(untilMs)) throw refused('the SAML assertion has no NotOnOrAfter', { reason: 'saml_response_invalid' });
  if (untilMs - nowMs() > MAX_ASSERTION_LIFETIME_SECONDS * 1000) throw refused('the SAML assertion is valid for more than a day', { reason: 'saml_response_invalid' });
  const attributes: Record<string, string[]> = {};
  for (const [k, v] of Object.entries(profile.attributes ?? {})) {
    const list = (Array.isArray(v) ? v : [v]).filter((x): x is string => typeof x === 'string');
    attributes[k] = list;
  }
  const irt = attr(responseXml, 'Response', 'InResponseTo');
  return {
    id,
    notOnOrAfter: Math.ceil(untilMs / 1000) + SAML_CLOCK_SKEW_SECONDS,
    inResponseTo: irt === undefined ? undefined : unescapeXml(irt),
    nameId: profile.nameID,
    attributes,
    sessionIndex: typeof profile.sessionIndex === 'string' ? profile.sessionIndex : undefined,
  };
}

/**
 * Single Logout from the IdP (SAML 2.0 Profiles §4.4, HTTP-Redirect binding):
 * a `LogoutRequest` whose redirect is signed by the IdP's key (an unsigned one
 * is refused: it would let anyone end a person's sessions). Answers the
 * NameID to sign out and, when the IdP has an SLO URL, where to send the
 * `LogoutResponse`.
 */
export async function verifyLogoutRequest(settings: SamlSettings, endpoints: SamlEndpoints, query: Record<string, string>, originalQuery: string, nowMs: () => number): Promise<{ nameId: string; responseUrl: string | undefined }> {
  if (!query['SAMLRequest'] || !query['Signature'] || !query['SigAlg']) throw refused('a logout request must be signed by the identity provider (HTTP-Redirect binding)', { reason: 'saml_logout_invalid' });
  const saml = await samlFor(settings, endpoints, { save: async () => {}, get: async () => undefined, remove: async () => {} }, nowMs);
  let profile;
  try {
    const out = await saml.validateRedirectAsync(query, originalQuery);
    profile = out.profile;
    if (!out.loggedOut || profile === null) throw new Error('not a logout request');
  } catch (err) {
    throw refused('the logout request is not valid for this connection', { reason: 'saml_logout_invalid' }, err);
  }
  const responseUrl = settings.idp_slo_url === null ? undefined : await saml.getLogoutResponseUrlAsync(profile, query['RelayState'] ?? '', {}, true);
  return { nameId: profile.nameID, responseUrl };
}

/** The profile fields a mapping names (first value; groups: every value). */
export function mapAttributes(a: SamlAssertion, mapping: SsoAttributeMapping): { email: string | undefined; givenName: string | undefined; familyName: string | undefined; groups: string[] } {
  const first = (name: string): string | undefined => a.attributes[name]?.[0];
  const email = first(mapping.email) ?? (/^[^@\s]+@[^@\s]+$/.test(a.nameId) ? a.nameId : undefined);
  return { email, givenName: first(mapping.given_name), familyName: first(mapping.family_name), groups: a.attributes[mapping.groups] ?? [] };
}

/**
 * Reads what a connection needs from IdP metadata (SAML 2.0 Metadata): the
 * entity id, the SingleSignOnService of the HTTP-Redirect binding, the
 * SingleLogoutService, and the signing certificates of the IDPSSODescriptor.
 */
export async function readIdpMetadata(xml: string): Promise<{ entityId: string; ssoUrl: string; sloUrl: string | null; certificates: string[] }> {
  const bad = (why: string) => new LatchkeyError('invalid_argument', `the IdP metadata is not usable: ${why}`, { reason: 'invalid_saml_metadata' });
  const entityId = attr(xml, 'EntityDescriptor', 'entityID');
  if (entityId === undefined) throw bad('no EntityDescriptor entityID');
  const idp = /<(?:[A-Za-z0-9_.-]+:)?IDPSSODescriptor\b[\s\S]*?<\/(?:[A-Za-z0-9_.-]+:)?IDPSSODescriptor>/.exec(xml)?.[0];
  if (idp === undefined) throw bad('no IDPSSODescriptor');
  const service = (element: string): string | undefined => {
    for (const m of idp.matchAll(new RegExp(`<(?:[A-Za-z0-9_.-]+:)?${element}\\b[^>]*>`, 'g'))) {
      if (/Binding="urn:oasis:names:tc:SAML:2\.0:bindings:HTTP-Redirect"/.test(m[0])) return unescapeXml(/Location="([^"]*)"/.exec(m[0])?.[1] ?? '');
    }
    return undefined;
  };
  const ssoUrl = service('SingleSignOnService');
  if (ssoUrl === undefined || ssoUrl === '') throw bad('no SingleSignOnService with the HTTP-Redirect binding');
  const certificates: string[] = [];
  for (const kd of idp.matchAll(/<(?:[A-Za-z0-9_.-]+:)?KeyDescriptor\b([^>]*)>([\s\S]*?)<\/(?:[A-Za-z0-9_.-]+:)?KeyDescriptor>/g)) {
    if (/use="encryption"/.test(kd[1] ?? '')) continue;
    const c = /<(?:[A-Za-z0-9_.-]+:)?X509Certificate>([\s\S]*?)<\//.exec(kd[2] ?? '')?.[1]?.replace(/\s+/g, '');
    if (c !== undefined && c !== '' && !certificates.includes(c)) certificates.push(c);
  }
  if (certificates.length === 0) throw bad('no signing certificate');
  return { entityId: unescapeXml(entityId), ssoUrl, sloUrl: service('SingleLogoutService') ?? null, certificates };
}
