/**
 * Outbound-request guard for webhook endpoints (security matrix D1, D2).
 *
 * - Only `http:` and `https:` URLs with a host are accepted.
 * - The host is resolved once; when any resolved address is private,
 *   loopback, link-local, metadata, multicast, reserved or an IPv6
 *   transition form that can embed one of those (IPv4-mapped, NAT64, 6to4,
 *   Teredo), the URL is refused unless `allowPrivate` is true.
 * - The connection is then dialled to the validated address only
 *   ({@link pinnedLookup}), so a second DNS answer (rebinding) can never
 *   steer the request elsewhere.
 *
 * IPv4 literals in odd notations (`2130706433`, `0x7f.1`) are normalised by
 * the WHATWG URL parser before we see them, so they are classified as the
 * address they really are.
 */
import { BlockList, isIP } from 'node:net';
import { lookup as dnsLookup } from 'node:dns/promises';
import type { LookupFunction } from 'node:net';
import { LatchkeyError } from '../engine/errors.ts';

/** One resolved address. */
export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Resolves a host name to every address it has (injectable for tests). */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

/** How outbound URLs are checked. */
export interface SsrfPolicy {
  /** When true, private/loopback/link-local/metadata addresses are allowed (tests, e2e setups). */
  allowPrivate: boolean;
  /** Overrides the built-in classifier: returns true when `address` must be refused. */
  isBlocked?: (address: string, family: 4 | 6) => boolean;
  /** Overrides DNS resolution (tests). */
  resolve?: Resolver;
}

/** A URL that passed the guard, with the address every connection must use. */
export interface ValidatedEndpoint {
  url: URL;
  /** The host name as written (for TLS SNI and the Host header). */
  hostname: string;
  /** The validated address the connection is pinned to. */
  address: string;
  family: 4 | 6;
}

const blocked = new BlockList();
// IPv4: RFC 1918, loopback, link-local (incl. 169.254.169.254 metadata), CGNAT,
// "this network", IETF protocol assignments, TEST-NETs, benchmarking,
// 6to4 relay anycast, multicast and reserved/broadcast.
for (const [net, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  blocked.addSubnet(net, prefix, 'ipv4');
}
// IPv6: unspecified, loopback, discard, ULA, link-local, site-local, multicast,
// documentation, and the transition prefixes that can carry an IPv4 target.
for (const [net, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['100::', 64],
  ['2001::', 32],
  ['2001:db8::', 32],
  ['2002::', 16],
  ['64:ff9b::', 96],
  ['64:ff9b:1::', 48],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const) {
  blocked.addSubnet(net, prefix, 'ipv6');
}

/** Expands an IPv6 address into its eight 16-bit groups. */
function ipv6Groups(address: string): number[] | undefined {
  let a = address;
  const zone = a.indexOf('%');
  if (zone >= 0) a = a.slice(0, zone);
  // A trailing dotted IPv4 part becomes two groups.
  const v4 = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(a);
  if (v4) {
    const [b0, b1, b2, b3] = v4.slice(1).map(Number) as [number, number, number, number];
    a = `${a.slice(0, v4.index)}${((b0 << 8) | b1).toString(16)}:${((b2 << 8) | b3).toString(16)}`;
  }
  const halves = a.split('::');
  if (halves.length > 2) return undefined;
  const head = halves[0] ? halves[0].split(':') : [];
  const tail = halves.length === 2 && halves[1] ? halves[1].split(':') : [];
  const fill = halves.length === 2 ? 8 - head.length - tail.length : 0;
  const groups = [...head, ...Array<string>(Math.max(fill, 0)).fill('0'), ...tail].map((g) => parseInt(g, 16));
  return groups.length === 8 && groups.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff) ? groups : undefined;
}

/**
 * True when the address must not be reached by server-side requests.
 * IPv4-mapped (`::ffff:a.b.c.d`) and IPv4-compatible forms are judged by the
 * IPv4 address they carry.
 */
export function isPrivateAddress(address: string, family: 4 | 6 = isIP(address) === 6 ? 6 : 4): boolean {
  if (family === 4) return blocked.check(address, 'ipv4');
  const groups = ipv6Groups(address);
  if (!groups) return true;
  const embedded = `${groups[6]! >> 8}.${groups[6]! & 0xff}.${groups[7]! >> 8}.${groups[7]! & 0xff}`;
  const zeros5 = groups.slice(0, 5).every((g) => g === 0);
  if (zeros5 && groups[5] === 0xffff) return blocked.check(embedded, 'ipv4');
  if (zeros5 && groups[5] === 0 && (groups[6] !== 0 || groups[7]! > 1)) return true; // deprecated IPv4-compatible
  return blocked.check(address.split('%')[0]!, 'ipv6');
}

async function defaultResolve(hostname: string): Promise<ResolvedAddress[]> {
  const all = await dnsLookup(hostname, { all: true, verbatim: true });
  return all.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
}

function invalidEndpoint(message: string, cause?: unknown): LatchkeyError {
  return new LatchkeyError('invalid_argument', message, {
    reason: 'invalid_endpoint',
    ...(cause === undefined ? {} : { cause }),
  });
}

/**
 * Parses and checks an endpoint URL and resolves its host. Throws
 * `invalid_argument` / `invalid_endpoint` for a bad scheme, a missing host,
 * credentials in the URL, an unresolvable host or a refused address. Makes no
 * connection.
 */
export async function validateEndpoint(raw: string, policy: SsrfPolicy): Promise<ValidatedEndpoint> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch (err) {
    throw invalidEndpoint('endpoint is not a valid URL', err);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw invalidEndpoint('endpoint must use http or https');
  }
  if (url.hostname === '') throw invalidEndpoint('endpoint must have a host');
  if (url.username !== '' || url.password !== '') throw invalidEndpoint('endpoint must not carry credentials');
  const hostname = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  const literal = isIP(hostname);
  let addresses: ResolvedAddress[];
  if (literal !== 0) {
    addresses = [{ address: hostname, family: literal === 6 ? 6 : 4 }];
  } else {
    try {
      addresses = await (policy.resolve ?? defaultResolve)(hostname);
    } catch (err) {
      throw invalidEndpoint('endpoint host does not resolve', err);
    }
  }
  const first = addresses[0];
  if (!first) throw invalidEndpoint('endpoint host does not resolve');
  if (!policy.allowPrivate) {
    const check = policy.isBlocked ?? isPrivateAddress;
    // Refuse when ANY answer is private: a mixed answer is a rebinding tell.
    if (addresses.some((a) => check(a.address, a.family))) {
      throw invalidEndpoint('endpoint resolves to a private, loopback, link-local or reserved address');
    }
  }
  return { url, hostname, address: first.address, family: first.family };
}

/**
 * A `lookup` for `http.request`/`net.connect` that always answers with the
 * validated address, so the socket reaches exactly what was checked.
 */
export function pinnedLookup(target: ValidatedEndpoint): LookupFunction {
  return ((_hostname: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    if (options && options.all) callback(null, [{ address: target.address, family: target.family }]);
    else callback(null, target.address, target.family);
  }) as unknown as LookupFunction;
}
