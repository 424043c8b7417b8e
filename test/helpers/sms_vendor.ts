/**
 * A local HTTP server acting as the SMS vendor (Twilio's Messages API) for
 * tests: it records every message the server sends and answers `status`.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface SmsVendor {
  url: string;
  /** Every request received, with its `Idempotency-Key` header ('' when absent). */
  messages: Array<{ path: string; authorization: string; form: URLSearchParams; key: string }>;
  status: number;
  close(): Promise<void>;
}

/** The `--sms-*` flags that point the server at `vendor`. */
export const smsFlags = (vendor: SmsVendor): Record<string, string> => ({
  'sms-api-url': vendor.url,
  'sms-account-sid': 'AC123',
  'sms-api-key': 'SK456',
  'sms-api-secret': 'vendor-secret',
  'sms-sender': '+15550000000',
});

/** The six-digit code of the last message texted to `phone`, or undefined. */
export function lastCodeTo(vendor: SmsVendor, phone: string): string | undefined {
  const message = vendor.messages.filter((m) => m.form.get('To') === phone).at(-1);
  return /\b([0-9]{6})\b/.exec(message?.form.get('Body') ?? '')?.[1];
}

export async function startSmsVendor(): Promise<SmsVendor> {
  const vendor: SmsVendor = { url: '', messages: [], status: 201, close: async () => {} };
  const server: Server = createServer(async (req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    vendor.messages.push({ path: req.url ?? '', authorization: req.headers.authorization ?? '', key: String(req.headers['idempotency-key'] ?? ''), form: new URLSearchParams(Buffer.concat(chunks).toString('utf8')) });
    res.writeHead(vendor.status, { 'content-type': 'application/json' }).end(JSON.stringify({ sid: 'SM1' }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  vendor.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  vendor.close = () => new Promise<void>((r) => server.close(() => r()));
  return vendor;
}
