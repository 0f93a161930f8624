// Delimited text as RFC 4180 writes it, with the delimiter found from the header row (comma, semicolon, tab or
// pipe: spreadsheets in much of Europe write semicolons), read as it streams so a file of any size is handled
// record by record: fields optionally in double quotes, "" for a quote inside them, quoted fields may hold the
// delimiter and line breaks; CRLF or LF between records.
import { createReadStream } from 'node:fs';
import { InputError } from './agent-io.mjs';

export const DELIMITERS = [',', ';', '\t', '|'];
const NAMES = { ',': 'comma', ';': 'semicolon', '\t': 'tab', '|': 'pipe' };

export function delimiterName(delimiter) {
  return NAMES[delimiter];
}

/** The delimiter of a header row: the candidate that occurs most often outside quotes (a comma when none does). */
export function sniffDelimiter(headerLine) {
  const counts = new Map(DELIMITERS.map((delimiter) => [delimiter, 0]));
  let quoted = false;
  for (const char of headerLine) {
    if (char === '"') quoted = !quoted;
    else if (!quoted && counts.has(char)) counts.set(char, counts.get(char) + 1);
  }
  const [best, count] = [...counts.entries()].sort((a, b) => b[1] - a[1])[0];
  return count === 0 ? ',' : best;
}

/**
 * The records of the file at `path`, each `{line, fields}`, as they stream; blank lines are skipped. The first
 * chunk decides the delimiter unless one is given. Throws on a quote left open or text after a closing quote.
 */
export async function* readRecords(path, label, { delimiter: given } = {}) {
  let delimiter = given;
  let fields = [];
  let field = '';
  let quoted = false;
  let afterQuote = false;
  let fieldStarted = false;
  let line = 1;
  let recordLine = 1;
  let first = true;
  let pendingCr = false;
  const endField = () => {
    fields.push(field);
    field = '';
    afterQuote = false;
    fieldStarted = false;
  };
  const stream = createReadStream(path, { encoding: 'utf8', highWaterMark: 256 * 1024 });
  for await (let chunk of stream) {
    if (first) {
      chunk = chunk.replace(/^\uFEFF/, '');
      delimiter ??= sniffDelimiter(chunk.split(/\r?\n/, 1)[0]);
      yield { delimiter };
      first = false;
    }
    const records = [];
    for (let i = 0; i < chunk.length; i++) {
      const char = chunk[i];
      if (pendingCr) {
        pendingCr = false;
        if (char === '\n') continue;
      }
      if (quoted === 'maybe-closing') {
        if (char === '"') {
          field += '"';
          quoted = true;
          continue;
        }
        quoted = false;
        afterQuote = true;
      }
      if (quoted) {
        if (char === '"') {
          if (chunk[i + 1] === '"') {
            field += '"';
            i++;
          } else if (i + 1 === chunk.length) {
            // The chunk ends on a quote: whether it is doubled is known from the next one, so keep it for then.
            quoted = 'maybe-closing';
          } else {
            quoted = false;
            afterQuote = true;
          }
        } else {
          if (char === '\n') line++;
          field += char;
        }
        continue;
      }
      if (char === '"' && !fieldStarted && !afterQuote) {
        quoted = true;
        fieldStarted = true;
      } else if (char === delimiter) {
        endField();
      } else if (char === '\n' || char === '\r') {
        endField();
        if (!(fields.length === 1 && fields[0] === '')) records.push({ line: recordLine, fields });
        fields = [];
        if (char === '\r') {
          if (chunk[i + 1] === '\n') i++;
          else if (i + 1 === chunk.length) pendingCr = true;
        }
        line++;
        recordLine = line;
      } else if (afterQuote) {
        throw new InputError(`${label}: line ${line}: a quoted field must end at a ${NAMES[delimiter]} or the end of the line`);
      } else {
        field += char;
        fieldStarted = true;
      }
    }
    for (const record of records) yield record;
  }
  if (first) yield { delimiter: delimiter ?? ',' };
  if (quoted === 'maybe-closing') {
    quoted = false;
    afterQuote = true;
  }
  if (quoted === true) throw new InputError(`${label}: the quoted field opened on line ${recordLine} is never closed`);
  if (field !== '' || fields.length > 0 || afterQuote) {
    endField();
    yield { line: recordLine, fields };
  }
}
