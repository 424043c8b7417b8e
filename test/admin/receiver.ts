/** Test helper: a programmable webhook receiver on loopback that records every request. */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  headers: IncomingMessage['headers'];
  body: string;
  path: string;
}

export type Handler = (req: Received, res: ServerResponse) => void;

export interface Receiver {
  port: number;
  url: string;
  received: Received[];
  /** Handler for the next requests (default: 200 "ok"). */
  handler: Handler;
  /**
   * While true the receiver is down: every connection is reset as soon as it
   * opens, and nothing is recorded. The port stays held, so that no other
   * process can take it before the receiver comes back (as closing and
   * listening again on the same port would allow).
   */
  down: boolean;
  close(): Promise<void>;
}

/** Starts a receiver on `host` (default 127.0.0.1) and `port` (default: any free port). */
export async function startReceiver(port = 0, host = '127.0.0.1'): Promise<Receiver> {
  const received: Received[] = [];
  const sockets = new Set<import('node:net').Socket>();
  const r: Receiver = {
    port: 0,
    url: '',
    received,
    down: false,
    handler: (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('ok');
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const entry = { headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), path: req.url ?? '/' };
      received.push(entry);
      r.handler(entry, res);
    });
  });
  server.on('connection', (s) => {
    if (r.down) {
      s.resetAndDestroy();
      return;
    }
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  r.port = (server.address() as AddressInfo).port;
  r.url = `http://${host}:${r.port}/hook`;
  return r;
}
