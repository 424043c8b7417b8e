/**
 * A SAML 2.0 identity provider in the test process: its own key pair and
 * self-signed certificate (made by openssl for each IdP), its metadata, and
 * signed responses built and signed with xml-crypto as an IdP signs them. Its
 * HTTP endpoint answers an AuthnRequest (HTTP-Redirect binding) with an
 * auto-submitting form that POSTs the response to the ACS, as Okta and
 * Entra ID do; `/init` starts IdP-initiated SSO the same way.
 */
import { execFileSync } from 'node:child_process';
import { createSign, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import { SignedXml } from 'xml-crypto';
import { startTestServerOnPort, type TestServer, type TestServerOptions } from './server.ts';

export interface AssertionOptions {
  acsUrl: string;
  audience: string;
  email: string;
  inResponseTo?: string | undefined;
  givenName?: string;
  familyName?: string;
  groups?: string[];
  /** Seconds from now (default -60 and +300). */
  notBefore?: number;
  notOnOrAfter?: number;
  /** Sign the assertion (default true). */
  sign?: boolean;
  recipient?: string;
  issuer?: string;
}

const esc = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
const iso = (offsetSeconds: number): string => new Date(Date.now() + offsetSeconds * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');

export class TestSamlIdp {
  readonly entityId: string;
  readonly privateKey: string;
  readonly certificate: string;
  #server: Server | undefined;
  url = '';
  /** The AuthnRequests received (their ID, ACS URL, and whether the redirect carried a signature). */
  readonly requests: { id: string; acs: string; relayState: string | undefined; signed: boolean }[] = [];
  /** Who the IdP signs in next. */
  user: Omit<AssertionOptions, 'acsUrl' | 'audience' | 'inResponseTo'> = { email: 'someone@example.com' };
  /** Where the SP lives (audience and ACS of responses to IdP-initiated SSO). */
  sp: { acsUrl: string; audience: string } | undefined;

  constructor(name = 'idp') {
    const dir = mkdtempSync(join(tmpdir(), 'saml-idp-'));
    try {
      execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'), '-days', '2', '-subj', `/CN=${name}`], { stdio: 'ignore' });
      this.privateKey = readFileSync(join(dir, 'key.pem'), 'utf8');
      this.certificate = readFileSync(join(dir, 'cert.pem'), 'utf8');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    this.entityId = `https://${name}.idp.example/${randomBytes(4).toString('hex')}`;
  }

  get certificateBody(): string {
    return this.certificate.replace(/-----(BEGIN|END) CERTIFICATE-----/g, '').replace(/\s+/g, '');
  }

  metadata(ssoUrl = `${this.url}/sso`): string {
    return `<?xml version="1.0"?>
<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" entityID="${esc(this.entityId)}">
  <md:IDPSSODescriptor WantAuthnRequestsSigned="false" protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">
    <md:KeyDescriptor use="signing"><ds:KeyInfo xmlns:ds="http://www.w3.org/2000/09/xmldsig#"><ds:X509Data><ds:X509Certificate>${this.certificateBody}</ds:X509Certificate></ds:X509Data></ds:KeyInfo></md:KeyDescriptor>
    <md:NameIDFormat>urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress</md:NameIDFormat>
    <md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" Location="${esc(ssoUrl)}"/>
    <md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="${esc(ssoUrl)}"/>
  </md:IDPSSODescriptor>
</md:EntityDescriptor>`;
  }

  /** The XML of a response with one assertion, its assertion signed unless `sign: false`. */
  responseXml(o: AssertionOptions): string {
    const id = `_a${randomBytes(16).toString('hex')}`;
    const irt = o.inResponseTo === undefined ? '' : ` InResponseTo="${esc(o.inResponseTo)}"`;
    const attrs: [string, string[]][] = [['email', [o.email]], ['firstName', [o.givenName ?? 'Ada']], ['lastName', [o.familyName ?? 'Lovelace']], ['groups', o.groups ?? []]];
    const attributeXml = attrs
      .filter(([, v]) => v.length > 0)
      .map(([n, vs]) => `<saml:Attribute Name="${n}">${vs.map((v) => `<saml:AttributeValue>${esc(v)}</saml:AttributeValue>`).join('')}</saml:Attribute>`)
      .join('');
    const issuer = esc(o.issuer ?? this.entityId);
    const assertion = `<saml:Assertion xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="${id}" Version="2.0" IssueInstant="${iso(0)}"><saml:Issuer>${issuer}</saml:Issuer><saml:Subject><saml:NameID Format="urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress">${esc(o.email)}</saml:NameID><saml:SubjectConfirmation Method="urn:oasis:names:tc:SAML:2.0:cm:bearer"><saml:SubjectConfirmationData NotOnOrAfter="${iso(o.notOnOrAfter ?? 300)}" Recipient="${esc(o.recipient ?? o.acsUrl)}"${irt}/></saml:SubjectConfirmation></saml:Subject><saml:Conditions NotBefore="${iso(o.notBefore ?? -60)}" NotOnOrAfter="${iso(o.notOnOrAfter ?? 300)}"><saml:AudienceRestriction><saml:Audience>${esc(o.audience)}</saml:Audience></saml:AudienceRestriction></saml:Conditions><saml:AuthnStatement AuthnInstant="${iso(0)}" SessionIndex="${id}"><saml:AuthnContext><saml:AuthnContextClassRef>urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport</saml:AuthnContextClassRef></saml:AuthnContext></saml:AuthnStatement><saml:AttributeStatement>${attributeXml}</saml:AttributeStatement></saml:Assertion>`;
    const response = `<samlp:Response xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="_r${randomBytes(16).toString('hex')}" Version="2.0" IssueInstant="${iso(0)}" Destination="${esc(o.acsUrl)}"${irt}><saml:Issuer>${issuer}</saml:Issuer><samlp:Status><samlp:StatusCode Value="urn:oasis:names:tc:SAML:2.0:status:Success"/></samlp:Status>${assertion}</samlp:Response>`;
    if (o.sign === false) return response;
    const sig = new SignedXml({
      privateKey: this.privateKey,
      publicCert: this.certificate,
      signatureAlgorithm: 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256',
      canonicalizationAlgorithm: 'http://www.w3.org/2001/10/xml-exc-c14n#',
    });
    sig.addReference({
      xpath: "//*[local-name(.)='Assertion']",
      transforms: ['http://www.w3.org/2000/09/xmldsig#enveloped-signature', 'http://www.w3.org/2001/10/xml-exc-c14n#'],
      digestAlgorithm: 'http://www.w3.org/2001/04/xmlenc#sha256',
    });
    sig.computeSignature(response, { location: { reference: "//*[local-name(.)='Assertion']/*[local-name(.)='Issuer']", action: 'after' } });
    return sig.getSignedXml();
  }

  /** The query of a LogoutRequest for `nameId` by the HTTP-Redirect binding, signed unless `sign: false`. */
  logoutQuery(o: { sloUrl: string; nameId: string; sign?: boolean; signer?: TestSamlIdp }): string {
    const xml = `<samlp:LogoutRequest xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="_l${randomBytes(16).toString('hex')}" Version="2.0" IssueInstant="${iso(0)}" Destination="${esc(o.sloUrl)}"><saml:Issuer>${esc(this.entityId)}</saml:Issuer><saml:NameID Format="urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress">${esc(o.nameId)}</saml:NameID></samlp:LogoutRequest>`;
    const query = `SAMLRequest=${encodeURIComponent(deflateRawSync(Buffer.from(xml)).toString('base64'))}&SigAlg=${encodeURIComponent('http://www.w3.org/2001/04/xmldsig-more#rsa-sha256')}`;
    if (o.sign === false) return query;
    const signature = createSign('RSA-SHA256').update(query).sign((o.signer ?? this).privateKey, 'base64');
    return `${query}&Signature=${encodeURIComponent(signature)}`;
  }

  /** A base64 `SAMLResponse`. */
  response(o: AssertionOptions): string {
    return Buffer.from(this.responseXml(o)).toString('base64');
  }

  /** The auto-submitting form an IdP answers with. */
  #form(acs: string, samlResponse: string, relayState: string | undefined): string {
    return `<!doctype html><html><body><form id="f" method="post" action="${esc(acs)}"><input type="hidden" name="SAMLResponse" value="${esc(samlResponse)}">${relayState === undefined ? '' : `<input type="hidden" name="RelayState" value="${esc(relayState)}">`}<button type="submit">Continue</button></form><script>document.getElementById('f').submit()</script></body></html>`;
  }

  async start(): Promise<void> {
    this.#server = createServer((req, res) => {
      const u = new URL(req.url ?? '/', 'http://127.0.0.1');
      if (u.pathname === '/sso') {
        const xml = inflateRawSync(Buffer.from(u.searchParams.get('SAMLRequest') ?? '', 'base64')).toString('utf8');
        const id = /\sID="([^"]+)"/.exec(xml)?.[1] ?? '';
        const acs = /AssertionConsumerServiceURL="([^"]+)"/.exec(xml)?.[1]?.replace(/&amp;/g, '&') ?? '';
        const relayState = u.searchParams.get('RelayState') ?? undefined;
        this.requests.push({ id, acs, relayState, signed: u.searchParams.has('Signature') && u.searchParams.has('SigAlg') });
        const audience = /<saml:Issuer[^>]*>([^<]+)</.exec(xml)?.[1] ?? '';
        res.setHeader('content-type', 'text/html');
        res.end(this.#form(acs, this.response({ ...this.user, acsUrl: acs, audience, inResponseTo: id }), relayState));
        return;
      }
      if (u.pathname === '/metadata') {
        res.setHeader('content-type', 'application/samlmetadata+xml');
        res.end(this.metadata());
        return;
      }
      if (u.pathname === '/init' && this.sp !== undefined) {
        res.setHeader('content-type', 'text/html');
        res.end(this.#form(this.sp.acsUrl, this.response({ ...this.user, acsUrl: this.sp.acsUrl, audience: this.sp.audience }), undefined));
        return;
      }
      res.statusCode = 404;
      res.end();
    });
    await new Promise<void>((resolve) => this.#server!.listen(0, '127.0.0.1', resolve));
    const a = this.#server.address();
    this.url = `http://127.0.0.1:${typeof a === 'object' && a !== null ? a.port : 0}`;
  }

  async close(): Promise<void> {
    if (this.#server !== undefined) await new Promise<void>((resolve) => this.#server!.close(() => resolve()));
  }
}

/** A test server on a port known before it starts, with `--url` naming it (SAML endpoints are absolute URLs). */
export function startSsoServer(
  flags: Record<string, string | boolean | number>,
  options: TestServerOptions,
  hostname = '127.0.0.1',
): Promise<TestServer> {
  return startTestServerOnPort((port) => ({ url: `http://${hostname}:${port}`, ...flags }), options);
}

/** Calls `op` over REST with `headers`; throws on an error answer, else resolves to the answer's body. */
export type OkCall = (op: string, input: Record<string, unknown>, headers: Record<string, string>) => Promise<Record<string, unknown>>;

/**
 * What every SSO test starts from: an owner signed up on `srv` with
 * `password`, their organization, and `domain` proven through the test's TXT
 * records (`txt`, the server's resolver).
 */
export async function ownedOrganization(srv: TestServer, txt: Map<string, string[][]>, password: string, domain = 'acme.example.com'): Promise<{ ok: OkCall; owner: Record<string, string>; orgId: string; domain: string }> {
  const ok: OkCall = async (op, input, headers) => {
    const r = await srv.call(op, input, { protocol: 'rest', headers });
    if (r.error !== undefined) throw new Error(`${op}: ${JSON.stringify(r.error)}`);
    return r.body!;
  };
  const signup = await ok('signup', { email: 'owner@owner.example.com', password }, {});
  const owner = { authorization: `Bearer ${signup['access_token'] as string}` };
  const orgId = (await ok('create_organization', { name: 'Acme' }, owner))['id'] as string;
  const d = await ok('add_organization_domain', { organization_id: orgId, domain }, owner);
  txt.set(d['txt_record_name'] as string, [[d['txt_record_value'] as string]]);
  await ok('verify_organization_domain', { organization_id: orgId, domain }, owner);
  return { ok, owner, orgId, domain };
}
