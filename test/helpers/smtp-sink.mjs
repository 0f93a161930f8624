// A real SMTP server for the tests (smtp-server, nodemailer's maintained server library), as a process of its own:
// the service under test sends to it over TCP exactly as it sends to a mail relay in production, and each message it
// accepts is parsed (mailparser) and written, whole, as one JSON file in --dir, named so that a directory listing
// reads in arrival order. Tests read those files; nothing reads the service's memory.
//   node test/helpers/smtp-sink.mjs --dir DIR      prints "smtp-sink listening on PORT" once it accepts mail
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';

const { values } = parseArgs({ options: { dir: { type: 'string' }, port: { type: 'string', default: '0' } } });
if (values.dir === undefined) {
  process.stderr.write('usage: smtp-sink.mjs --dir DIR [--port N]\n');
  process.exit(2);
}
const dir = values.dir;
mkdirSync(dir, { recursive: true });
let received = 0;

const server = new SMTPServer({
  // A relay on loopback for tests: no TLS, no authentication, any sender and recipient.
  secure: false,
  disabledCommands: ['STARTTLS', 'AUTH'],
  authOptional: true,
  size: 10 * 1024 * 1024,
  logger: false,
  onData(stream, session, callback) {
    simpleParser(stream)
      .then((mail) => {
        received += 1;
        const name = `${String(Date.now()).padStart(15, '0')}-${String(received).padStart(6, '0')}`;
        const message = {
          envelope_from: session.envelope.mailFrom ? session.envelope.mailFrom.address : null,
          envelope_to: session.envelope.rcptTo.map((rcpt) => rcpt.address.toLowerCase()),
          from: mail.from?.text ?? null,
          to:
            mail.to === undefined
              ? []
              : [mail.to].flat().flatMap((list) => list.value.map((address) => (address.address ?? '').toLowerCase())),
          subject: mail.subject ?? '',
          text: mail.text ?? '',
          headers: Object.fromEntries(
            [...mail.headers].map(([key, value]) => [key, typeof value === 'string' ? value : JSON.stringify(value)]),
          ),
          received_at: new Date().toISOString(),
        };
        // Written whole, then renamed into place: a reader never sees half a message.
        const temp = join(dir, `.${name}.tmp`);
        writeFileSync(temp, JSON.stringify(message, null, 2));
        renameSync(temp, join(dir, `${name}.json`));
        callback();
      })
      .catch((error) => callback(error));
  },
});
server.on('error', (error) => process.stderr.write(`smtp-sink: ${error.message}\n`));
server.listen(Number(values.port), '127.0.0.1', () => {
  process.stdout.write(`smtp-sink listening on ${server.server.address().port}\n`);
});
const stop = () => server.close(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
