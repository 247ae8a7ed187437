/**
 * Tells an invited member that they were added to a team, by e-mail through the SMTP
 * server the service already uses for its notices (CLOUDPLANE_SMTP_URL); without one, the
 * invitation is only logged. The notice carries no key: an owner or admin makes the
 * member's first key and hands it over (docs/api.md, Settings).
 */
import type { Logger } from 'pino';
import type { WebhookConfig } from '../config';
import { Mailer } from '../lib/mailer';
import { textOf } from '../lib/unknown-values';

export interface InvitationNotice {
  to: string;
  teamId: string;
  teamName: string;
  role: string;
  memberId: string;
  /** The inviting member's e-mail, so the invitee knows whom to ask for a key. */
  invitedBy: string;
}

export class InvitationMailer {
  private readonly mailer: Mailer;

  constructor(
    config: Pick<WebhookConfig, 'smtpUrl' | 'smtpFrom'>,
    private readonly logger: Logger,
  ) {
    this.mailer = new Mailer(config);
  }

  /** Sends the notice; a failure is logged, never thrown: the member was added either way. */
  async invited(notice: InvitationNotice): Promise<void> {
    const log = { team: notice.teamId, member_id: notice.memberId };
    if (!this.mailer.configured) {
      this.logger.info(log, 'member invited; no e-mail sent: CLOUDPLANE_SMTP_URL is not set');
      return;
    }
    try {
      await this.mailer.send({
        to: notice.to,
        subject: `You were added to the team ${notice.teamName} on Cloudplane`,
        text: [
          `${notice.invitedBy} added you to the team ${notice.teamName} (${notice.teamId}) on Cloudplane, as ${notice.role}.`,
          '',
          `Ask ${notice.invitedBy}, or another owner or admin of the team, for your API key: they make it for you`,
          `(POST /api/v1/settings/api-keys with user_id ${notice.memberId}).`,
        ].join('\n'),
      });
      this.logger.info(log, 'member invited: invitation e-mailed');
    } catch (err) {
      this.logger.warn({ ...log, err: textOf(err) }, 'member invited: the invitation e-mail could not be sent');
    }
  }

  close(): void {
    this.mailer.close();
  }
}
