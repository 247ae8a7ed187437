/**
 * An invited member is told by e-mail, through the SMTP server the service already uses
 * for its notices: a real SMTP server (smtp-server) receives it.
 */
import { eventually, startTestService, TestService } from '../helpers/service';
import { startMailbox, Mailbox } from '../helpers/mailbox';

describe('member invitations', () => {
  let t: TestService;
  let mailbox: Mailbox;

  beforeAll(async () => {
    mailbox = await startMailbox();
    t = await startTestService({ CLOUDPLANE_SMTP_URL: mailbox.url, CLOUDPLANE_SMTP_FROM: 'Cloudplane <invites@cloudplane.test>' });
  });
  afterAll(async () => {
    await t.stop();
    await mailbox.stop();
  });

  it('e-mails the invited member whom to ask for a key, and no key', async () => {
    const invited = await t.api('POST', '/api/v1/settings/team/members', { email: 'new.member@example.org', role: 'member' });
    expect(invited.status).toBe(201);
    const mail = await eventually(async () => mailbox.mails.find((m) => m.to.includes('new.member@example.org')));
    expect(mail.text).toMatch(/invites@cloudplane\.test/);
    expect(mail.text).toContain('My team');
    expect(mail.text).toContain('as member');
    expect(mail.text).toContain('owner@example.com');
    expect(mail.text).toContain(invited.body.data.id);
    expect(mail.text).not.toMatch(/cpk_/);
  });
});
