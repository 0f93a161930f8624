// The run's files for the node to upload (SWARM_ARTIFACTS_DIR): every draft, every refused lead and every message
// sent, as CSV a spreadsheet opens, written as the leads stream, so however many there are, all are kept.
import { createWriteStream } from 'node:fs';
import { join } from 'node:path';

const field = (value) => {
  const text = value === null || value === undefined ? '' : String(value);
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
};

/** A CSV file in `dir` with `columns` as its header; `write(row)` waits while the disk catches up. */
export function csvArtifact(dir, name, columns) {
  const stream = createWriteStream(join(dir, name), { encoding: 'utf8' });
  let rows = 0;
  const line = (values) => `${values.map(field).join(',')}\r\n`;
  stream.write(line(columns));
  return {
    name,
    get rows() {
      return rows;
    },
    async write(row) {
      rows++;
      if (!stream.write(line(columns.map((column) => row[column])))) await new Promise((resolve) => stream.once('drain', resolve));
    },
    close: () => new Promise((resolve, reject) => stream.end((error) => (error ? reject(error) : resolve()))),
  };
}
