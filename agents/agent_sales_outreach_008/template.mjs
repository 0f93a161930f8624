// The message template: `{{field}}` placeholders named after the leads file's columns, and an optional first
// line `Subject: …` that becomes the draft's subject.
import { InputError } from './agent-io.mjs';

const PLACEHOLDER = /\{\{\s*([^{}]*?)\s*\}\}/g;

/** Checks every placeholder against the columns before any lead is drafted: a typo fails the run, naming it. */
export function compileTemplate(text, columns) {
  let subject = null;
  let body = text.replace(/\r\n/g, '\n');
  const subjectLine = /^subject:[ \t]*(.*)\n(?:[ \t]*\n)?/i.exec(body);
  if (subjectLine) {
    subject = subjectLine[1].trim();
    body = body.slice(subjectLine[0].length);
  }
  const used = [];
  for (const part of subject === null ? [body] : [subject, body]) {
    for (const match of part.matchAll(PLACEHOLDER)) {
      if (!columns.includes(match[1])) {
        throw new InputError(`template: unknown placeholder {{${match[1]}}} (the leads file's fields are: ${columns.join(', ')})`);
      }
      if (!used.includes(match[1])) used.push(match[1]);
    }
    const unclosed = part.replace(PLACEHOLDER, '').indexOf('{{');
    if (unclosed !== -1) throw new InputError(`template: "{{" without a closing "}}" near "${part.slice(unclosed, unclosed + 30)}"`);
  }
  if (body.trim() === '') throw new InputError('template: the message body is empty');
  return { subject, body, placeholders: used };
}

/**
 * The template filled with one lead's fields; a value is inserted as it is, never read as a placeholder. A line
 * break in a quoted CSV field stays in the body (as \n) but not in the subject, which must be one header line.
 */
export function fillTemplate(template, lead) {
  const fill = (part, value) => part.replace(PLACEHOLDER, (_, name) => value(lead[name]));
  const body = fill(template.body, (value) => value.replace(/\r\n?/g, '\n'));
  if (template.subject === null) return { body };
  return { subject: fill(template.subject, (value) => value.replace(/\s*[\r\n]+\s*/g, ' ')), body };
}
