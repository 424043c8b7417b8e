/**
 * IPv4 and IPv6 addresses and CIDR ranges, parsed into bytes: what
 * `--trusted-proxies` is validated with and what the client-IP resolver
 * (client_ip.ts) matches peers against.
 */

/** Parses an IPv4/IPv6 address or CIDR into a matcher; undefined when malformed. */
export function parseCidr(text: string): { bytes: Uint8Array; prefix: number } | undefined {
  const [addr, prefixText] = text.split('/');
  if (addr === undefined) return undefined;
  const bytes = ipBytes(addr);
  if (!bytes) return undefined;
  const maxPrefix = bytes.length * 8;
  if (prefixText === undefined) return { bytes, prefix: maxPrefix };
  if (!/^\d+$/.test(prefixText)) return undefined;
  const prefix = Number(prefixText);
  if (prefix > maxPrefix) return undefined;
  return { bytes, prefix };
}

/** The bytes of an IPv4 (4) or IPv6 (16) address; IPv4-mapped IPv6 is returned as IPv4. */
export function ipBytes(addr: string): Uint8Array | undefined {
  const v4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(addr);
  if (v4) {
    const b = v4.slice(1).map(Number);
    if (b.some((x) => x > 255)) return undefined;
    return Uint8Array.from(b);
  }
  if (!addr.includes(':')) return undefined;
  const mapped = /^::ffff:(\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3})$/i.exec(addr);
  if (mapped?.[1]) return ipBytes(mapped[1]);
  const parts = addr.split('::');
  if (parts.length > 2) return undefined;
  const head = parts[0] ? parts[0].split(':') : [];
  const tail = parts.length === 2 && parts[1] ? parts[1].split(':') : [];
  const missing = 8 - head.length - tail.length;
  if ((parts.length === 1 && missing !== 0) || missing < 0) return undefined;
  const groups = [...head, ...Array<string>(parts.length === 2 ? missing : 0).fill('0'), ...tail];
  const out = new Uint8Array(16);
  for (let i = 0; i < 8; i++) {
    const g = groups[i];
    if (g === undefined || !/^[0-9a-f]{1,4}$/i.test(g)) return undefined;
    const n = parseInt(g, 16);
    out[i * 2] = n >> 8;
    out[i * 2 + 1] = n & 0xff;
  }
  return out;
}

