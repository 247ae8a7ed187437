/**
 * E-mail through the service's SMTP server (CLOUDPLANE_SMTP_URL, from CLOUDPLANE_SMTP_FROM),
 * for the notices the service sends: a disabled webhook to its team's owner, an invitation
 * to a new member. Without an SMTP server it is not `configured`, and callers log instead.
 */
import nodemailer from 'nodemailer';

export interface Message {
  to: string;
  subject: string;
  text: string;
}

/** Where mail goes (CLOUDPLANE_SMTP_URL; none: not configured) and whom it is from (CLOUDPLANE_SMTP_FROM). */
export interface MailerConfig {
  smtpUrl?: string;
  smtpFrom: string;
}

export class Mailer {
  private readonly transport: nodemailer.Transporter | null;

  constructor(private readonly config: MailerConfig) {
    this.transport = config.smtpUrl ? nodemailer.createTransport(config.smtpUrl) : null;
  }

  get configured(): boolean {
    return this.transport !== null;
  }

  /** Sends one message; rejects when the SMTP server refuses or cannot be reached. */
  async send(message: Message): Promise<void> {
    if (!this.transport) throw new Error('CLOUDPLANE_SMTP_URL is not set');
    await this.transport.sendMail({ from: this.config.smtpFrom, ...message });
  }

  close(): void {
    this.transport?.close();
  }
}
