// Aligned columns for human output. Widths are measured without colour codes, so styled cells still line up.
const ANSI = /\u001b\[[0-9;]*m/g;

export type Align = 'left' | 'right';

function visibleWidth(text: string): number {
  return text.replace(ANSI, '').length;
}

function pad(text: string, width: number, align: Align): string {
  const fill = ' '.repeat(Math.max(0, width - visibleWidth(text)));
  return align === 'right' ? fill + text : text + fill;
}

/** Rows under a header, two spaces between columns; no trailing spaces. */
export function table(header: string[], rows: string[][], align: Align[] = []): string {
  const all = [header, ...rows];
  const widths = header.map((_, column) => Math.max(...all.map((row) => visibleWidth(row[column] ?? ''))));
  return all
    .map((row) =>
      row
        .map((cell, column) =>
          pad(cell, column === row.length - 1 && align[column] !== 'right' ? 0 : widths[column]!, align[column] ?? 'left'),
        )
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

/** "key  value" lines with the keys in one column. */
export function keyValues(entries: [string, string][]): string {
  const width = Math.max(...entries.map(([key]) => key.length));
  return entries.map(([key, value]) => `${key.padEnd(width)}  ${value}`.trimEnd()).join('\n');
}

/** "2025-01-02 13:04:05Z": second precision reads better in a table than the full ISO form. */
export function shortTime(iso: string): string {
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)}Z`;
}
