/** A real SMTP server (smtp-server) on a free local port that keeps every mail it is sent. */
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';

export interface Mail {
  to: string[];
  text: string;
}

export interface Mailbox {
  /** For CLOUDPLANE_SMTP_URL. */
  url: string;
  mails: Mail[];
  stop(): Promise<void>;
}

export async function startMailbox(): Promise<Mailbox> {
  const mails: Mail[] = [];
  const smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData(stream, session, callback) {
      let text = '';
      stream.setEncoding('utf8');
      stream.on('data', (chunk: string) => (text += chunk));
      stream.on('end', () => {
        mails.push({ to: session.envelope.rcptTo.map((a) => a.address), text });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve));
  const { port } = smtp.server.address() as AddressInfo;
  return { url: `smtp://127.0.0.1:${port}`, mails, stop: () => new Promise<void>((resolve) => smtp.close(() => resolve())) };
}
