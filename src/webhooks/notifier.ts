/**
 * Tells a team's owner that the service disabled one of their webhook subscriptions,
 * by e-mail through CLOUDPLANE_SMTP_URL; without an SMTP server configured, a warning
 * in the log has to do.
 */
import type { Logger } from 'pino';
import type { Store } from '../store/types';
import type { WebhookConfig } from '../config';
import { Mailer } from '../lib/mailer';
import { teamFamily, userFamily, TeamSpec, UserSpec } from '../resources/accounts';
import { textOf } from '../lib/unknown-values';

export interface DisabledNotice {
  team: string;
  webhookId: string;
  url: string;
  reason: string;
}

export class OwnerNotifier {
  private readonly mailer: Mailer;

  constructor(
    private readonly store: Store,
    config: WebhookConfig,
    private readonly logger: Logger,
  ) {
    this.mailer = new Mailer(config);
  }

  async webhookDisabled(notice: DisabledNotice): Promise<void> {
    const to = await this.ownerEmail(notice.team);
    const log = { team: notice.team, webhook_id: notice.webhookId };
    if (!this.mailer.configured || !to) {
      this.logger.warn(
        { ...log, owner_email: to ?? null },
        `webhook ${notice.webhookId} was disabled (${notice.reason}); no e-mail sent: ${this.mailer.configured ? 'the team has no owner e-mail' : 'CLOUDPLANE_SMTP_URL is not set'}`,
      );
      return;
    }
    try {
      await this.mailer.send({
        to,
        subject: `Webhook ${notice.webhookId} was disabled`,
        text: [
          `Your webhook subscription ${notice.webhookId} to ${notice.url} was disabled.`,
          '',
          notice.reason,
          '',
          `Events are not queued for it until you re-enable it: PATCH /api/v1/webhooks/${notice.webhookId} with {"active": true}.`,
        ].join('\n'),
      });
      this.logger.info(log, 'webhook disabled: owner notified by e-mail');
    } catch (err) {
      this.logger.warn({ ...log, err: textOf(err) }, 'webhook disabled: the e-mail to the owner could not be sent');
    }
  }

  close(): void {
    this.mailer.close();
  }

  private async ownerEmail(team: string): Promise<string | undefined> {
    const teamObject = await this.store.get<TeamSpec, unknown>(teamFamily.kind, team, team);
    const ownerId = teamObject?.spec.owner_id;
    if (!ownerId) return undefined;
    const owner = await this.store.get<UserSpec, unknown>(userFamily.kind, team, ownerId);
    return owner?.spec.email;
  }
}
