/**
 * The cookies a server-side client keeps (spec, Authentication: "server-side
 * clients without a browser forward the Cookie header"). A client talks to one
 * service, so cookies are kept by name only; `Domain` and `Path` do not
 * narrow them. `Max-Age`/`Expires` are honoured: a cookie set to expire (as
 * logout does) is dropped.
 */
import { LatchkeyError } from '../engine/errors.ts';

const COOKIE_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** RFC 6265 §4.1.1 cookie-octet. */
const COOKIE_VALUE = /^[\x21\x23-\x2B\x2D-\x3A\x3C-\x5B\x5D-\x7E]*$/;

export class CookieJar {
  readonly #cookies = new Map<string, { value: string; expiresAt: number | undefined }>();
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /** Takes in `Set-Cookie` values (HTTP headers or gRPC `set-cookie` metadata). */
  store(setCookies: readonly string[]): void {
    for (const line of setCookies) {
      const [pair = '', ...attrs] = line.split(';');
      const eq = pair.indexOf('=');
      if (eq <= 0) continue;
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      let expiresAt: number | undefined;
      let maxAgeSeen = false;
      for (const attr of attrs) {
        const [k = '', v = ''] = attr.split('=', 2).map((x) => x.trim());
        const key = k.toLowerCase();
        if (key === 'max-age' && /^-?\d+$/.test(v)) {
          maxAgeSeen = true;
          expiresAt = this.#now() + Number(v) * 1000;
        } else if (key === 'expires' && !maxAgeSeen) {
          const t = Date.parse(attr.slice(attr.indexOf('=') + 1).trim());
          if (!Number.isNaN(t)) expiresAt = t;
        }
      }
      if (value === '' || (expiresAt !== undefined && expiresAt <= this.#now())) this.#cookies.delete(name);
      else this.#cookies.set(name, { value, expiresAt });
    }
  }

  /** The `Cookie` header value, or undefined when the jar is empty. */
  header(): string | undefined {
    const now = this.#now();
    const parts: string[] = [];
    for (const [name, c] of this.#cookies) {
      if (c.expiresAt !== undefined && c.expiresAt <= now) this.#cookies.delete(name);
      else parts.push(`${name}=${c.value}`);
    }
    return parts.length > 0 ? parts.join('; ') : undefined;
  }

  /** The current cookies by name. */
  entries(): Record<string, string> {
    const out: Record<string, string> = {};
    if (this.header() === undefined) return out;
    for (const [name, c] of this.#cookies) out[name] = c.value;
    return out;
  }

  /** Sets one cookie by hand (e.g. a session cookie a server-side app forwards). */
  set(name: string, value: string): void {
    if (!COOKIE_NAME.test(name)) throw new LatchkeyError('invalid_argument', `cookie name ${JSON.stringify(name)} is not a valid token`, { reason: 'invalid_client_option' });
    if (!COOKIE_VALUE.test(value)) throw new LatchkeyError('invalid_argument', `cookie ${name}: the value has characters a cookie cannot carry`, { reason: 'invalid_client_option' });
    this.#cookies.set(name, { value, expiresAt: undefined });
  }

  clear(): void {
    this.#cookies.clear();
  }
}
