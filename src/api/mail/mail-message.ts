// One message the service sends (mail/mailer.ts): to one address, plain text.
export interface MailMessage {
  to: string;
  subject: string;
  text: string;
}
