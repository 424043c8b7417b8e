/**
 * jose (JWT, JWS and JWK on WebCrypto), loaded on first use. The modules that
 * sign and verify tokens import only its types and reach the library through
 * {@link jose}; the first call loads it (about fifty modules) with a
 * synchronous `require` of its ES module build, so a server that has not yet
 * signed or verified a token, or imported a key, has not loaded it.
 */
import { createRequire } from 'node:module';

type Jose = typeof import('jose');

const requirePackage = createRequire(import.meta.url);
let library: Jose | undefined;

/** The jose library, loaded on the first call. */
export function jose(): Jose {
  return (library ??= requirePackage('jose') as Jose);
}
