/**
 * One outbound POST to a validated, address-pinned endpoint, with a hard
 * deadline for the whole exchange and a cap on how much of the response is
 * read. Redirects are never followed: a 3xx is a failed attempt (its target
 * could be an internal address, security matrix D3).
 */
import type { IncomingMessage } from 'node:http';
import { pinnedLookup, type ValidatedEndpoint } from './ssrf.ts';

// Not `import … from 'node:http'`: see `createServer` in cmd/server.ts (the ESM namespace would load undici).
const { request: httpRequest } = process.getBuiltinModule('node:http');
const { request: httpsRequest } = process.getBuiltinModule('node:https');

export interface PostResult {
  /** HTTP status, or 0 when no response arrived. */
  status: number;
  /** Response text, at most `maxResponseBytes` bytes of it. */
  body: string;
  /** True when the response was longer than the cap. */
  truncated: boolean;
  /** Milliseconds from start to the end of the exchange. */
  durationMs: number;
  /** Set when no complete response arrived: `timeout` or a socket error code. */
  error: string;
}

export interface PostOptions {
  timeoutMs: number;
  maxResponseBytes: number;
  headers: Record<string, string>;
}

/** POSTs `body` to `target`; never throws, failures come back in `error`. */
export function postPinned(target: ValidatedEndpoint, body: string, options: PostOptions): Promise<PostResult> {
  const started = performance.now();
  return new Promise((resolve) => {
    let settled = false;
    let status = 0;
    const chunks: Buffer[] = [];
    let size = 0;
    let truncated = false;
    const finish = (error: string): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.destroy();
      resolve({
        status,
        body: Buffer.concat(chunks).toString('utf8'),
        truncated,
        durationMs: Math.round(performance.now() - started),
        error,
      });
    };
    const url = target.url;
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const req = send({
      method: 'POST',
      host: target.hostname,
      port: url.port || (url.protocol === 'https:' ? 443 : 80),
      path: `${url.pathname}${url.search}`,
      headers: {
        ...options.headers,
        'content-type': 'application/json',
        'content-length': String(Buffer.byteLength(body)),
      },
      lookup: pinnedLookup(target),
      // An IP literal never goes through `lookup`; it was validated as is.
      agent: false,
      ...(url.protocol === 'https:' ? { servername: target.hostname, minVersion: 'TLSv1.2' as const } : {}),
    });
    const timer = setTimeout(() => finish('timeout'), options.timeoutMs);
    req.on('error', (err: NodeJS.ErrnoException) => finish(err.code ?? 'request_failed'));
    req.on('response', (res: IncomingMessage) => {
      status = res.statusCode ?? 0;
      res.on('data', (chunk: Buffer) => {
        if (truncated) return;
        const room = options.maxResponseBytes - size;
        if (chunk.length > room) {
          chunks.push(chunk.subarray(0, room));
          size += room;
          truncated = true;
          // Stop reading: the rest of an oversized body is never buffered.
          finish('');
          return;
        }
        chunks.push(chunk);
        size += chunk.length;
      });
      res.on('end', () => finish(''));
      res.on('error', (err: NodeJS.ErrnoException) => finish(err.code ?? 'response_failed'));
    });
    req.end(body);
  });
}
