/**
 * The client IP: the socket's remote address, or, when that peer is a trusted
 * proxy (`--trusted-proxies`), the right-most untrusted address of
 * `X-Forwarded-For`. Everything keyed on the client (rate limit, audit, CSRF)
 * uses this one function.
 */
import { ipBytes, parseCidr } from './cidr.ts';

export type ClientIpResolver = (socketAddress: string | undefined, forwardedFor: string | undefined) => string;

function normalise(addr: string): string {
  return addr.startsWith('::ffff:') && addr.includes('.') ? addr.slice(7) : addr;
}

export function createClientIpResolver(trustedProxies: readonly string[]): ClientIpResolver {
  const nets = trustedProxies.map((c) => parseCidr(c)).filter((x) => x !== undefined);
  const trusted = (addr: string): boolean => {
    const b = ipBytes(addr);
    if (!b) return false;
    return nets.some((n) => {
      if (n.bytes.length !== b.length) return false;
      let bits = n.prefix;
      for (let i = 0; bits > 0; i++, bits -= 8) {
        const mask = bits >= 8 ? 0xff : (0xff << (8 - bits)) & 0xff;
        if (((n.bytes[i] ?? 0) & mask) !== ((b[i] ?? 0) & mask)) return false;
      }
      return true;
    });
  };
  return (socketAddress, forwardedFor) => {
    const peer = normalise(socketAddress ?? 'unknown');
    if (nets.length === 0 || !forwardedFor || !trusted(peer)) return peer;
    const hops = forwardedFor.split(',').map((h) => normalise(h.trim())).filter(Boolean);
    for (let i = hops.length - 1; i >= 0; i--) {
      const hop = hops[i] as string;
      if (!ipBytes(hop)) return peer;
      if (!trusted(hop)) return hop;
    }
    return hops[0] ?? peer;
  };
}

/**
 * The rate-limit key of a client IP: the address itself for IPv4, its /64
 * network for IPv6 (one subscriber usually holds a whole /64, so per-address
 * keys would let it rotate past the limit).
 */
export function rateLimitKey(ip: string): string {
  if (!ip.includes(':')) return ip;
  const b = ipBytes(ip);
  if (!b || b.length !== 16) return ip;
  const groups: string[] = [];
  for (let i = 0; i < 8; i += 2) groups.push((((b[i] ?? 0) << 8) | (b[i + 1] ?? 0)).toString(16));
  return `${groups.join(':')}::/64`;
}
