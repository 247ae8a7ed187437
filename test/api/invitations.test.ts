/**
 * An invited member is told by e-mail, through the SMTP server the service already uses
 * for its notices: a real SMTP server (smtp-server) receives it.
 */
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { eventually, startTestService, TestService } from '../helpers/service';

describe('member invitations', () => {
  let t: TestService;
  let smtp: SMTPServer;
  const mails: Array<{ to: string[]; text: string }> = [];

  beforeAll(async () => {
    smtp = new SMTPServer({
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
    const port = (smtp.server.address() as AddressInfo).port;
    t = await startTestService({ CLOUDPLANE_SMTP_URL: `smtp://127.0.0.1:${port}`, CLOUDPLANE_SMTP_FROM: 'Cloudplane <invites@cloudplane.test>' });
  });
  afterAll(async () => {
    await t.stop();
    await new Promise<void>((resolve) => smtp.close(() => resolve()));
  });

  it('e-mails the invited member whom to ask for a key, and no key', async () => {
    const invited = await t.api('POST', '/api/v1/settings/team/members', { email: 'new.member@example.org', role: 'member' });
    expect(invited.status).toBe(201);
    const mail = await eventually(async () => mails.find((m) => m.to.includes('new.member@example.org')));
    expect(mail.text).toMatch(/invites@cloudplane\.test/);
    expect(mail.text).toContain('My team');
    expect(mail.text).toContain('as member');
    expect(mail.text).toContain('owner@example.com');
    expect(mail.text).toContain(invited.body.data.id);
    expect(mail.text).not.toMatch(/cpk_/);
  });
});
