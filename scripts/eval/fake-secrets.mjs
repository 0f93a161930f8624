// Credentials in the shapes real ones have, made at run time from a seed: the repository holds none (so reviewing
// its own history finds none of them), and each run of the eval plants the same values.
import { createHash, createHmac, createPublicKey, generateKeyPairSync } from 'node:crypto';

const UPPER = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
const LOWER = 'abcdefghijklmnopqrstuvwxyz';
const DIGITS = '0123456789';
const ALNUM = UPPER + LOWER + DIGITS;

/** Numbers in [0, 1) from SHA-256 of the seed and a counter: the same seed, the same credentials, every run. */
function seeded(seedText) {
  let counter = 0;
  return () => createHash('sha256').update(`${seedText}:${counter++}`).digest().readUInt32BE(0) / 4294967296;
}

const base64url = (value) => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');

/** Every placeholder an eval set may use ({{name}}), each a fresh credential of its kind for `seedText`. */
export function fakeSecrets(seedText) {
  const random = seeded(seedText);
  const pick = (alphabet, length) => Array.from({ length }, () => alphabet[Math.floor(random() * alphabet.length)]).join('');
  const jwtBody = `${base64url({ alg: 'HS256', typ: 'JWT' })}.${base64url({ sub: `user-${pick(DIGITS, 6)}`, role: 'admin', iat: 1767225600 })}`;
  const { privateKey: rsa } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const { privateKey: ec } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const { privateKey: ed25519 } = generateKeyPairSync('ed25519');
  const { privateKey: rsaEncrypted } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const { privateKey: rsaInSecret, publicKey: rsaInSecretPublic } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return {
    aws_key_id: `AKIA${pick(UPPER + '234567', 16)}`,
    aws_key_id_2: `AKIA${pick(UPPER + '234567', 16)}`,
    aws_secret: pick(ALNUM + '/+', 40),
    github_pat: `ghp_${pick(ALNUM, 36)}`,
    github_fine: `github_pat_${pick(ALNUM, 22)}_${pick(ALNUM, 59)}`,
    slack_webhook: `https://hooks.slack.com/services/T${pick(UPPER + DIGITS, 8)}/B${pick(UPPER + DIGITS, 10)}/${pick(ALNUM, 24)}`,
    slack_bot: `xoxb-${pick(DIGITS, 12)}-${pick(DIGITS, 13)}-${pick(ALNUM, 24)}`,
    rsa_private_key: rsa.export({ type: 'pkcs1', format: 'pem' }).trim(),
    ec_private_key_json: JSON.stringify(ec.export({ type: 'sec1', format: 'pem' })),
    password: `${pick(UPPER, 1)}${pick(LOWER, 6)}${pick(DIGITS, 3)}!${pick(LOWER, 3)}`,
    password_2: `${pick(LOWER, 5)}${pick(DIGITS, 2)}${pick(UPPER, 3)}#${pick(LOWER, 4)}`,
    stripe_live: `sk_live_51${pick(ALNUM, 97)}`,
    stripe_restricted: `rk_live_51${pick(ALNUM, 97)}`,
    openai_project: `sk-proj-${pick(ALNUM + '_-', 74)}T3BlbkFJ${pick(ALNUM + '_-', 74)}`,
    google_api_key: `AIza${pick(ALNUM + '_-', 35)}`,
    postgres_password: `${pick(LOWER, 4)}${pick(DIGITS, 4)}${pick(UPPER, 4)}`,
    npm_token: `npm_${pick(ALNUM, 36)}`,
    sendgrid: `SG.${pick(ALNUM + '_-', 22)}.${pick(ALNUM + '_-', 43)}`,
    jwt: `${jwtBody}.${createHmac('sha256', pick(ALNUM, 32)).update(jwtBody).digest('base64url')}`,
    env_password: `${pick(LOWER, 3)}${pick(DIGITS, 2)}${pick(UPPER, 2)}%${pick(LOWER, 4)}${pick(DIGITS, 1)}`,
    // The second held-out part's forms (added after the ones above, so those keep their values).
    aws_sts_key_id: `ASIA${pick(UPPER + '234567', 16)}`,
    github_oauth: `gho_${pick(ALNUM, 36)}`,
    slack_trigger: `https://hooks.slack.com/triggers/T${pick(UPPER + DIGITS, 10)}/${pick(DIGITS, 13)}/${pick('0123456789abcdef', 32)}`,
    ed25519_private_key_yaml: ed25519.export({ type: 'pkcs8', format: 'pem' }).trim().split('\n').join('\n    '),
    password_3: `${pick(LOWER, 4)}-${pick(UPPER + DIGITS, 5)}-${pick(LOWER + DIGITS, 6)}`,
    openai_service: `sk-svcacct-${pick(ALNUM + '_-', 74)}T3BlbkFJ${pick(ALNUM + '_-', 74)}`,
    // The third held-out part's forms.
    github_server: `ghs_${pick(ALNUM, 36)}`,
    openai_legacy: `sk-${pick(ALNUM, 20)}T3BlbkFJ${pick(ALNUM, 20)}`,
    encrypted_private_key: rsaEncrypted.export({ type: 'pkcs8', format: 'pem', cipher: 'aes-256-cbc', passphrase: pick(ALNUM, 16) }).trim(),
    // The fourth held-out part's forms.
    aws_sts_key_id_2: `ASIA${pick(UPPER + '234567', 16)}`,
    aws_secret_2: pick(ALNUM + '/+', 40),
    github_user: `ghu_${pick(ALNUM, 36)}`,
    slack_webhook_2: `https://hooks.slack.com/services/T${pick(UPPER + DIGITS, 8)}/B${pick(UPPER + DIGITS, 10)}/${pick(ALNUM, 24)}`,
    // OpenSSH's own format, which Node does not write: its magic, then bytes in the shape of a key, base64 in lines of 70.
    openssh_private_key: [
      '-----BEGIN OPENSSH PRIVATE KEY-----',
      ...(Buffer.concat([Buffer.from('openssh-key-v1\0\0\0\0\x04none\0\0\0\x04none'), Buffer.from(pick(ALNUM, 360))])
        .toString('base64')
        .match(/.{1,70}/g) ?? []),
      '-----END OPENSSH PRIVATE KEY-----',
    ].join('\n'),
    password_4: `${pick(UPPER, 2)}${pick(LOWER, 5)}${pick(DIGITS, 4)}$${pick(LOWER, 2)}`,
    stripe_live_2: `sk_live_51${pick(ALNUM, 97)}`,
    openai_project_2: `sk-proj-${pick(ALNUM + '_-', 74)}T3BlbkFJ${pick(ALNUM + '_-', 74)}`,
    google_api_key_2: `AIza${pick(ALNUM + '_-', 35)}`,
    postgres_password_2: `${pick(UPPER, 3)}${pick(LOWER, 5)}${pick(DIGITS, 4)}`,
    npm_token_2: `npm_${pick(ALNUM, 36)}`,
    sendgrid_2: `SG.${pick(ALNUM + '_-', 22)}.${pick(ALNUM + '_-', 43)}`,
    jwt_2: (() => {
      const body = `${base64url({ alg: 'HS256', typ: 'JWT' })}.${base64url({ sub: `svc-${pick(DIGITS, 5)}`, scope: 'health', iat: 1767312000 })}`;
      return `${body}.${createHmac('sha256', pick(ALNUM, 32)).update(body).digest('base64url')}`;
    })(),
    env_password_2: `${pick(LOWER, 4)}${pick(UPPER, 2)}${pick(DIGITS, 3)}&${pick(LOWER, 3)}`,
    // The fifth held-out part's forms (drawing no random number, so the values above keep theirs): a key as a
    // Kubernetes Secret's data holds it, the PEM base64-encoded.
    rsa_private_key_base64: Buffer.from(rsaInSecret.export({ type: 'pkcs8', format: 'pem' })).toString('base64'),
    // Not secrets: what a 'clean' file holds that looks like one.
    rsa_public_key: createPublicKey(rsa).export({ type: 'spki', format: 'pem' }).trim(),
    sri_hash: Buffer.from(pick(ALNUM, 64)).toString('base64'),
    rsa_public_key_base64: Buffer.from(rsaInSecretPublic.export({ type: 'spki', format: 'pem' })).toString('base64'),
    // The sixth held-out part's forms (drawing no random number, so the values above keep theirs): a TLS key as
    // OpenSSL writes an EC one (SEC1), and, not a secret, an HTTP public-key pin (base64 of the SHA-256 of a key's
    // SubjectPublicKeyInfo, as OkHttp's CertificatePinner takes it).
    ec_private_key: generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey.export({ type: 'sec1', format: 'pem' }).trim(),
    spki_pin_sha256: createHash('sha256')
      .update(createPublicKey(rsa).export({ type: 'spki', format: 'der' }))
      .digest('base64'),
    // The seventh held-out part's forms (drawing no random number, so the values above keep theirs): a key as a
    // Google Cloud service account's JSON key file holds it, PKCS#8 in a JSON string with its newlines escaped.
    service_account_private_key_json: JSON.stringify(
      generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }),
    ),
    // The eighth held-out part's forms. They draw no number of `random` (so every value above keeps its own): each
    // comes from a stream of its own, `seeded` on the seed and its name. An ed25519 key as ssh-keygen writes it
    // (openssh-key-v1, no cipher, a comment), a Mailgun key, an Azure storage account key (base64 of 64 bytes), a
    // docker config.json auth (base64 of user:token), a Slack user token, and passwords in the shapes they have.
    ...(() => {
      const own = (name, alphabet, length) => {
        const draw = seeded(`${seedText}:${name}`);
        return Array.from({ length }, () => alphabet[Math.floor(draw() * alphabet.length)]).join('');
      };
      const string = (value) => {
        const bytes = Buffer.from(value);
        const length = Buffer.alloc(4);
        length.writeUInt32BE(bytes.length);
        return Buffer.concat([length, bytes]);
      };
      const { privateKey } = generateKeyPairSync('ed25519');
      const jwk = privateKey.export({ format: 'jwk' });
      const pub = Buffer.from(jwk.x, 'base64url');
      const priv = Buffer.from(jwk.d, 'base64url');
      const pubBlob = Buffer.concat([string('ssh-ed25519'), string(pub)]);
      const check = Buffer.from(own('openssh_check', '0123456789abcdef', 8), 'hex');
      let section = Buffer.concat([
        check,
        check,
        string('ssh-ed25519'),
        string(pub),
        string(Buffer.concat([priv, pub])),
        string('deploy@ci-runner-04'),
      ]);
      section = Buffer.concat([section, Buffer.from(Array.from({ length: (8 - (section.length % 8)) % 8 }, (_, i) => i + 1))]);
      const count = Buffer.alloc(4);
      count.writeUInt32BE(1);
      const body = Buffer.concat([
        Buffer.from('openssh-key-v1\0'),
        string('none'),
        string('none'),
        string(''),
        count,
        string(pubBlob),
        string(section),
      ]);
      return {
        openssh_ed25519_private_key: [
          '-----BEGIN OPENSSH PRIVATE KEY-----',
          ...(body.toString('base64').match(/.{1,70}/g) ?? []),
          '-----END OPENSSH PRIVATE KEY-----',
        ].join('\n'),
        mailgun_key: `key-${own('mailgun_key', '0123456789abcdef', 32)}`,
        mysql_password: `${own('mysql_password', UPPER, 1)}${own('mysql_password_2', LOWER, 6)}${own('mysql_password_3', DIGITS, 3)}@${own('mysql_password_4', LOWER, 2)}`,
        jwt_secret: own('jwt_secret', ALNUM, 48),
        k8s_db_password: own('k8s_db_password', ALNUM, 24),
        azure_account_key: Buffer.from(own('azure_account_key', ALNUM, 64)).toString('base64'),
        docker_auth: Buffer.from(`deploy:dckr_pat_${own('docker_auth', ALNUM + '_-', 27)}`).toString('base64'),
        py_password: `${own('py_password', LOWER, 5)}${own('py_password_2', DIGITS, 3)}${own('py_password_3', UPPER, 2)}*${own('py_password_4', LOWER, 3)}`,
        py_password_2: `${own('py_password_5', UPPER + DIGITS, 6)}-${own('py_password_6', LOWER, 6)}`,
        py_password_3: `${own('py_password_7', LOWER + DIGITS, 10)}!${own('py_password_8', UPPER, 2)}`,
        slack_user: `xoxp-${own('slack_user', DIGITS, 12)}-${own('slack_user_2', DIGITS, 12)}-${own('slack_user_3', DIGITS, 13)}-${own('slack_user_4', '0123456789abcdef', 32)}`,
      };
    })(),
  };
}

/** `text` with each {{name}} replaced by its credential; a name the generator does not make is an error of the set. */
export function fillSecrets(text, secrets) {
  return text.replace(/\{\{(\w+)\}\}/g, (_, name) => {
    if (!(name in secrets)) throw new Error(`eval set: no fake credential named {{${name}}}`);
    return secrets[name];
  });
}
