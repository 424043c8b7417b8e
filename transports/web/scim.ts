/**
 * The SCIM 2.0 endpoint `/scim/v2` (RFC 7644; docs/scim.md): an express
 * router that authenticates the organization's bearer token, limits each
 * token's rate, reads `application/scim+json` (or `application/json`)
 * bodies, and hands the request to the organization's SCIM service
 * (auth/scim.ts). Its callers are directories that send a bearer token and
 * never a cookie, so the browser CSRF rule does not concern this path; it is
 * mounted before that guard (transports/http/app.ts).
 */
import express, { type Request, type Response, type Router } from 'express';
import type { AuthService, OrgEvent, StoreTransaction } from '../../auth/index.ts';
import { ScimError } from '../../auth/index.ts';
import { bearerToken, issuerOf, rateLimitKey, type Config, type RateLimiter, type Services } from '../../server/index.ts';

export const SCIM_BASE = '/scim/v2';
const SCIM_TYPE = /^application\/(?:scim\+)?json\s*(?:;|$)/i;

export interface ScimRouterOptions {
  services: Services;
  config: Pick<Config, 'url' | 'host' | 'httpPort' | 'httpBodyLimit'>;
  rateLimiter: RateLimiter;
}

function send(res: Response, status: number, body?: unknown, headers: Record<string, string> = {}): void {
  if (res.headersSent) return;
  res.statusCode = status;
  for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
  if (body === undefined) {
    res.end();
    return;
  }
  const text = JSON.stringify(body);
  res.setHeader('content-type', 'application/scim+json; charset=utf-8');
  res.setHeader('content-length', Buffer.byteLength(text));
  res.end(text);
}

function sendScimError(res: Response, err: ScimError, headers: Record<string, string> = {}): void {
  send(res, err.status, err.body, headers);
}

/** The `/scim/v2` router; undefined when organizations are off (DynamoDB main database). */
export function scimRouter(o: ScimRouterOptions): Router | undefined {
  const auth: AuthService | undefined = o.services.auth;
  const scim = auth?.scim;
  const orgs = auth?.organizations;
  if (scim === undefined || orgs === undefined) return undefined;
  const baseUrl = `${issuerOf(o.config)}${SCIM_BASE}`;
  const router = express.Router({ caseSensitive: false, strict: false });
  const json = express.json({ limit: o.config.httpBodyLimit, strict: true, type: (req) => SCIM_TYPE.test(req.headers['content-type'] ?? '') });

  router.use(SCIM_BASE, (req: Request, res: Response) => {
    void (async () => {
      const clientIp = (res.locals as { clientIp?: string }).clientIp ?? '';
      const token = typeof req.headers.authorization === 'string' ? bearerToken(req.headers.authorization) : undefined;
      const found = token === undefined ? undefined : await orgs.authenticateScimToken(token);
      if (found === undefined) {
        // A wrong token counts against the caller's address, as a wrong password does.
        const wait = await o.rateLimiter.take(rateLimitKey(clientIp));
        if (wait !== undefined) return sendScimError(res, new ScimError(429, 'too many requests'), { 'retry-after': String(Math.max(1, Math.ceil(wait))) });
        return sendScimError(res, new ScimError(401, 'a valid SCIM bearer token of an organization is required'), { 'www-authenticate': 'Bearer realm="scim"' });
      }
      const wait = await o.rateLimiter.take(`scim:${found.tokenId}`);
      if (wait !== undefined) return sendScimError(res, new ScimError(429, 'too many requests for this SCIM token'), { 'retry-after': String(Math.max(1, Math.ceil(wait))) });
      const method = req.method.toUpperCase();
      const body = await new Promise<unknown>((resolve, reject) => {
        if (method !== 'POST' && method !== 'PUT' && method !== 'PATCH') return resolve(undefined);
        json(req, res, (err?: unknown) => (err === undefined ? resolve(req.body) : reject(err)));
      }).catch((err: unknown) => {
        const e = err as { type?: string };
        if (e.type === 'entity.too.large') return new ScimError(413, `the body is larger than ${o.config.httpBodyLimit}`);
        return new ScimError(400, 'the body is not valid JSON', 'invalidSyntax');
      });
      if (body instanceof ScimError) return sendScimError(res, body);
      if ((method === 'POST' || method === 'PUT' || method === 'PATCH') && (body === undefined || body === null || typeof body !== 'object')) {
        return sendScimError(res, new ScimError(400, 'the body must be application/scim+json', 'invalidSyntax'));
      }
      const admin = o.services.admin;
      const requestId = (res.locals as { requestId?: string }).requestId;
      const record =
        admin === undefined
          ? undefined
          : async (tx: StoreTransaction, event: OrgEvent) => {
              if (event.webhook !== undefined) await admin.webhooks.emit(event.webhook, event.data, tx);
              await admin.audit.record(
                {
                  actor_type: 'system',
                  actor_id: `scim_token:${found.tokenId}`,
                  action: event.action,
                  resource_type: event.resourceType,
                  resource_id: event.resourceId,
                  ip_address: clientIp,
                  user_agent: req.headers['user-agent'] ?? '',
                  metadata: { ...event.data, protocol: 'scim', ...(requestId === undefined ? {} : { request_id: requestId }) },
                },
                tx,
              );
            };
      let segments: string[];
      try {
        segments = req.path.split('/').filter((s) => s !== '').map((s) => decodeURIComponent(s));
      } catch {
        return sendScimError(res, new ScimError(404, 'resource not found'));
      }
      const ifMatch = req.headers['if-match'];
      const out = await scim.handle(
        { org: found.org, tokenId: found.tokenId, baseUrl, record },
        { method, segments, query: req.query as Record<string, unknown>, body, ifMatch: typeof ifMatch === 'string' ? ifMatch : undefined },
      );
      send(res, out.status, out.body, out.headers);
    })().catch((err: unknown) => {
      // No stack trace to the directory: logged with the request id, answered in the SCIM error schema.
      o.services.logger.error('scim request failed', { err, request_id: (res.locals as { requestId?: string }).requestId });
      const status = (err as { code?: string }).code === 'unavailable' ? 503 : 500;
      sendScimError(res, new ScimError(status, status === 503 ? 'the service is unavailable; retry' : 'internal error'));
    });
  });
  return router;
}
