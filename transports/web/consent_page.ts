/**
 * The consent page at `/app/consent` (auth/consent.ts): where `/authorize`
 * sends a signed-in user when a client that is not first-party asks for
 * scopes they have not granted it. `GET /app/consent?ticket=…` shows the
 * client's name and each scope in plain words, in the language of the
 * request's `ui_locales`, the saved choice or `Accept-Language`; its form
 * posts the decision (`allow` or `deny`) to `POST /app/consent`, which
 * answers `303` back to `/authorize` with the ticket. Only the session that
 * the request was parked for can read or decide it; anything else gets the
 * "request expired" page (400).
 *
 * No script: a native form, under a policy that allows the page's one style
 * by hash and form submissions to this origin and to the client's redirect
 * URI (its origin, or its scheme for a native app), since a form's
 * redirects are held to `form-action` too; no framing (clickjacking).
 */
import { createHash } from 'node:crypto';
import { sessionCookieOf } from '../../auth/index.ts';
import type { HttpRoute, HttpRouteRequest, HttpRouteResponse, Services } from '../../server/index.ts';
import { CONSENT_MESSAGES, type ConsentMessages } from './consent_messages.ts';
import { DESIGN_CSS, escapeHtml } from './design.ts';
import { LANGUAGE_COOKIE, pickLanguage, type UserLocaleOf } from './i18n.ts';
import { RTL_LANGUAGES } from './login_messages.ts';

const STYLE = `${DESIGN_CSS}
main{width:min(30rem,100%);margin:0 auto;padding:var(--s6) var(--s4)}
ul.scopes{padding-inline-start:var(--s5);margin:var(--s3) 0}
ul.scopes li{margin:var(--s1) 0}
.actions{display:flex;flex-wrap:wrap;gap:var(--s2);margin-top:var(--s4)}
.actions button{flex:1 1 8rem;margin:0}
`;

const hash = `'sha256-${createHash('sha256').update(STYLE, 'utf8').digest('base64')}'`;
const LANGUAGES = Object.keys(CONSENT_MESSAGES);

/** Where the decision's redirects may go: this origin and the client's redirect URI (its origin, or its scheme). */
function formAction(redirectUri: string): string {
  try {
    const u = new URL(redirectUri);
    const target = u.protocol === 'http:' || u.protocol === 'https:' ? u.origin : u.protocol;
    return /^[A-Za-z0-9+.:/\-[\]]+$/.test(target) ? `'self' ${target}` : "'self'";
  } catch {
    return "'self'";
  }
}

function headers(lang: string, action = "'self'"): Record<string, string> {
  return {
    'content-security-policy': `default-src 'none'; style-src ${hash}; form-action ${action}; frame-ancestors 'none'; base-uri 'none'`,
    'x-frame-options': 'DENY',
    'referrer-policy': 'same-origin',
    'cache-control': 'no-store',
    pragma: 'no-cache',
    'content-language': lang,
    vary: 'Accept-Language, Cookie',
  };
}

function page(lang: string, title: string, body: string): string {
  const dir = RTL_LANGUAGES.has(lang) ? 'rtl' : 'ltr';
  return `<!DOCTYPE html>
<html lang="${lang}" dir="${dir}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<title>${escapeHtml(title)}</title>
<style>${STYLE}</style>
</head>
<body>
<main>
<div class="card">
${body}
</div>
</main>
</body>
</html>
`;
}

const fill = (text: string, client: string): string => escapeHtml(text).replace('{client}', `<strong>${escapeHtml(client)}</strong>`);

function consentHtml(m: ConsentMessages, lang: string, ticket: string, clientName: string, scope: readonly string[]): string {
  const items = scope
    .map((s) => (m as Record<string, string>)[`scope_${s}`] ?? s)
    .map((text) => `<li>${escapeHtml(text)}</li>`)
    .join('\n');
  return page(
    lang,
    m.title,
    `<h1>${fill(m.heading, clientName)}</h1>
<p id="intro">${fill(m.intro, clientName)}</p>
<ul class="scopes" aria-labelledby="intro">
${items}
</ul>
<p class="muted">${escapeHtml(m.later)}</p>
<form method="post" action="/app/consent">
<input type="hidden" name="ticket" value="${escapeHtml(ticket)}">
<div class="actions"><button id="allow" class="primary" type="submit" name="decision" value="allow">${escapeHtml(m.allow)}</button><button id="deny" class="secondary" type="submit" name="decision" value="deny">${escapeHtml(m.deny)}</button></div>
</form>`,
  );
}

/**
 * The audit row of a consent decision: who, which client, which scopes
 * (`user.consent_granted` or `user.consent_denied`; `revoke_consent` writes
 * `user.consent_revoked`). A row that cannot be written is logged; the
 * decision stands.
 */
async function recordDecision(services: Services, request: HttpRouteRequest, action: string, d: { user_id: string; client_id: string; scope: string[] }): Promise<void> {
  await services.admin?.userEvent(
    {
      actor_type: 'user',
      actor_id: d.user_id,
      action,
      resource_type: 'user',
      resource_id: d.user_id,
      ip_address: request.clientIp,
      user_agent: request.userAgent,
      metadata: { client_id: d.client_id, scopes: d.scope },
    },
    undefined,
    (err) => services.logger.error('consent decision not recorded', { action, request_id: request.requestId, err }),
  );
}

/** `/app/consent` (GET: the page; POST: the decision), when the OAuth provider and the login page are on. */
export function consentPageRoutes(services: Services, userLocale?: UserLocaleOf): HttpRoute[] {
  const consent = services.consent;
  if (consent === undefined || services.oauth === undefined || !services.config.enableLoginPage) return [];
  const languageOf = async (request: HttpRouteRequest, uiLocales?: string): Promise<string> =>
    pickLanguage(LANGUAGES, {
      uiLocales: uiLocales ?? request.query['ui_locales'],
      preferred: await userLocale?.(request.cookies),
      saved: request.cookies[LANGUAGE_COOKIE],
      acceptLanguage: request.acceptLanguage,
    });
  const gone = async (request: HttpRouteRequest): Promise<HttpRouteResponse> => {
    const lang = await languageOf(request);
    const m = CONSENT_MESSAGES[lang]!;
    return { status: 400, html: page(lang, m.goneTitle, `<h1>${escapeHtml(m.goneTitle)}</h1>\n<p>${escapeHtml(m.gone)}</p>`), headers: headers(lang) };
  };
  const handler = async (request: HttpRouteRequest): Promise<HttpRouteResponse> => {
    const cookie = sessionCookieOf(request.cookies);
    if (request.method === 'POST') {
      const decision = request.body['decision'];
      if (request.bodyError !== undefined || (decision !== 'allow' && decision !== 'deny')) return gone(request);
      const next = await consent.decide(request.body['ticket'], cookie, decision === 'allow');
      if (next === undefined) return gone(request);
      await recordDecision(services, request, decision === 'allow' ? 'user.consent_granted' : 'user.consent_denied', next);
      return { status: 303, headers: { location: next.location, 'cache-control': 'no-store' } };
    }
    const ticket = request.query['ticket'];
    const pending = await consent.pending(ticket, cookie);
    if (pending === undefined) return gone(request);
    const lang = await languageOf(request, pending.ui_locales);
    const m = CONSENT_MESSAGES[lang]!;
    return { html: consentHtml(m, lang, ticket as string, pending.client_name || pending.client_id, pending.scope), headers: headers(lang, formAction(pending.redirect_uri)) };
  };
  return [{ path: '/app/consent', methods: ['GET', 'POST'], handler }];
}
