/** Test helper: a real SMTP server on loopback that records accepted mails and can refuse them. */
import { SMTPServer, type SMTPServerDataStream, type SMTPServerSession } from 'smtp-server';
import type { AddressInfo } from 'node:net';

export interface Smtp {
  port: number;
  mails: string[];
  /** Answer for the next DATA commands: undefined accepts. */
  refuse: number | undefined;
  close(): Promise<void>;
}

export async function startSmtp(port = 0): Promise<Smtp> {
  const state: Smtp = { port: 0, mails: [], refuse: undefined, close: async () => {} };
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData(stream: SMTPServerDataStream, _session: SMTPServerSession, callback: (err?: Error | null) => void) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        if (state.refuse !== undefined) {
          const err = Object.assign(new Error('try later'), { responseCode: state.refuse });
          callback(err);
          return;
        }
        state.mails.push(Buffer.concat(chunks).toString('utf8'));
        callback();
      });
    },
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  state.port = (server.server.address() as AddressInfo).port;
  state.close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return state;
}

