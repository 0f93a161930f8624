// CSV as RFC 4180 writes it: comma-separated, fields optionally in double quotes, "" for a quote inside them,
// quoted fields may hold commas and line breaks; CRLF or LF between records.
import { InputError } from './agent-io.mjs';

/** Records with the line each starts on; blank lines are skipped. Throws on a quote left open. */
export function parseCsv(text, label) {
  const records = [];
  let fields = [];
  let field = '';
  let quoted = false;
  let wasQuoted = false;
  let line = 1;
  let recordLine = 1;
  const endField = () => {
    fields.push(field);
    field = '';
    wasQuoted = false;
  };
  const endRecord = () => {
    endField();
    if (!(fields.length === 1 && fields[0] === '')) records.push({ line: recordLine, fields });
    fields = [];
  };
  const source = text.replace(/^\uFEFF/, '');
  for (let i = 0; i < source.length; i++) {
    const char = source[i];
    if (quoted) {
      if (char === '"' && source[i + 1] === '"') {
        field += '"';
        i++;
      } else if (char === '"') {
        quoted = false;
        const next = source[i + 1];
        if (next !== undefined && next !== ',' && next !== '\n' && next !== '\r') {
          throw new InputError(`${label}: line ${line}: a quoted field must end at a comma or the end of the line`);
        }
      } else {
        if (char === '\n') line++;
        field += char;
      }
    } else if (char === '"' && field === '' && !wasQuoted) {
      quoted = true;
      wasQuoted = true;
    } else if (char === ',') {
      endField();
    } else if (char === '\n' || char === '\r') {
      if (char === '\r' && source[i + 1] === '\n') i++;
      endRecord();
      line++;
      recordLine = line;
    } else {
      field += char;
    }
  }
  if (quoted) throw new InputError(`${label}: the quoted field opened on line ${recordLine} is never closed`);
  if (field !== '' || fields.length > 0) endRecord();
  return records;
}

/** The header row and the data rows; the header names are trimmed and must be non-empty and distinct. */
export function readTable(text, label) {
  const [header, ...rows] = parseCsv(text, label);
  if (!header) throw new InputError(`${label}: the file is empty; it needs a header row`);
  const names = header.fields.map((name) => name.trim());
  names.forEach((name, i) => {
    if (name === '') throw new InputError(`${label}: column ${i + 1} of the header row has no name`);
    if (names.indexOf(name) !== i) throw new InputError(`${label}: the header names "${name}" twice`);
  });
  return { names, rows };
}
