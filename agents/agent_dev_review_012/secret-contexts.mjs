// Credentials that only their surroundings make one (./secrets.mjs runs these after its rules of one form each): an
// AWS secret key written beside its key id with no name of its own (new BasicAWSCredentials("AKIA…", "…")), and the
// values of a Kubernetes Secret, which are base64 (a private key in `tls.key:` is one once decoded).

/** An AWS access key id: long-term (AKIA) or temporary (ASIA), as secretlint's and gitleaks' rules have it. */
const AWS_KEY_ID = /\b(?:AKIA|ASIA)[A-Z2-7]{16}\b/;
/** A lone token of an AWS secret key's shape: 40 of base64's characters, neither part of a longer run nor hex. */
const AWS_SECRET_SHAPE = /(?<![A-Za-z0-9/+=])([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])/g;
/**
 * How many lines from its key id a nameless secret may sit: the id and its secret are written together, at most a
 * block apart (Hadoop's <property> of four lines, an INI section's next lines).
 */
const AWS_PAIR_LINES = 6;

/** Both cases and a digit: a random key has them all, a word, a path or a hash (hex) of 40 characters does not. */
const looksRandom = (value) => /[A-Z]/.test(value) && /[a-z]/.test(value) && /\d/.test(value) && !/^[0-9a-f]+$/i.test(value);

/**
 * `lines` the file's lines; `report(lineNumber, column, length, rule, what)` for each credential found; AWS's
 * documented example pair (its `EXAMPLE`) and other placeholders are none.
 */
export function awsSecretsBesideTheirId(lines, isPlaceholder, report) {
  const idLines = lines.flatMap((text, index) => (AWS_KEY_ID.test(text) ? [index] : []));
  if (idLines.length === 0) return;
  lines.forEach((text, index) => {
    if (!idLines.some((idLine) => Math.abs(idLine - index) <= AWS_PAIR_LINES)) return;
    for (const match of text.matchAll(AWS_SECRET_SHAPE)) {
      if (looksRandom(match[1]) && !isPlaceholder(match[1])) report(index + 1, match.index, match[1].length, 'aws-secret-access-key-beside-id', 'an AWS secret access key beside its key id');
    }
  });
}

const KUBERNETES_SECRET = /^kind:\s*Secret\s*$/m;
/** `  name: <base64>` under a Secret's `data:`: a value of a few bytes at least. */
const DATA_ENTRY = /^\s+([\w.-]+):\s*["']?([A-Za-z0-9+/]{16,}={0,2})["']?\s*$/;
const PRIVATE_KEY = /-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----/;

/**
 * The entries of a Kubernetes Secret (a manifest of `kind: Secret`) whose value, decoded, is a private key, or is
 * text under a name that says secret (`password: …`); a certificate or a public key beside them is neither.
 */
export function kubernetesSecretValues(text, lines, namesSecret, isPlaceholder, report) {
  if (!KUBERNETES_SECRET.test(text)) return;
  lines.forEach((line, index) => {
    const match = DATA_ENTRY.exec(line);
    if (!match) return;
    const decoded = Buffer.from(match[2], 'base64').toString('utf8');
    const privateKey = PRIVATE_KEY.test(decoded);
    const secretText = namesSecret(match[1]) && /^[\x21-\x7e]{6,}$/.test(decoded) && !isPlaceholder(decoded);
    if (privateKey || secretText) {
      report(index + 1, line.indexOf(match[2]), match[2].length, 'kubernetes-secret-value', privateKey ? 'a private key, base64 in a Kubernetes Secret' : 'a secret, base64 in a Kubernetes Secret');
    }
  });
}

/** A property's name and value as Hadoop's and Java's XML configurations write them, on their own lines. */
const XML_PROPERTY_NAME = /<name>\s*([^<\s]+)\s*<\/name>/;
const XML_PROPERTY_VALUE = /<value>\s*([^<\s]{6,})\s*<\/value>/;

/**
 * `<name>fs.s3a.secret.key</name>` then, within two lines, `<value>…</value>`: the value of a property whose name
 * says secret (core-site.xml, hive-site.xml and every configuration in that form).
 */
export function xmlPropertyValues(lines, namesSecret, isPlaceholder, report) {
  lines.forEach((line, index) => {
    const value = XML_PROPERTY_VALUE.exec(line);
    if (!value || isPlaceholder(value[1])) return;
    for (let back = index; back >= Math.max(0, index - 2); back--) {
      const name = XML_PROPERTY_NAME.exec(lines[back]);
      if (!name) continue;
      if (namesSecret(name[1])) report(index + 1, line.indexOf(value[1]), value[1].length, 'xml-property-secret', 'a hard-coded password or key');
      return;
    }
  });
}
