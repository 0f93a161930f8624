// Compares two V8 heap snapshots (bench:soak --snapshots writes them at the half and at the end): the objects by
// constructor (or, for strings, closures and arrays, by kind), their count and their own size in each, sorted by
// what grew most. What a leak keeps shows at the top; Chrome DevTools' Memory tab ("Comparison") then tells who holds
// it. Usage: node scripts/bench/heap-diff.mjs <before.heapsnapshot> <after.heapsnapshot> [rows]
import { readFileSync } from 'node:fs';

const [beforeFile, afterFile, rowsText = '25'] = process.argv.slice(2);
if (beforeFile === undefined || afterFile === undefined) {
  process.stderr.write('usage: node scripts/bench/heap-diff.mjs <before.heapsnapshot> <after.heapsnapshot> [rows]\n');
  process.exit(2);
}

/** Count and self size of each (type, name) of one snapshot. */
function census(file) {
  const snapshot = JSON.parse(readFileSync(file, 'utf8'));
  const meta = snapshot.snapshot.meta;
  const fields = meta.node_fields.length;
  const typeAt = meta.node_fields.indexOf('type');
  const nameAt = meta.node_fields.indexOf('name');
  const sizeAt = meta.node_fields.indexOf('self_size');
  const types = meta.node_types[typeAt];
  const groups = new Map();
  const nodes = snapshot.nodes;
  for (let index = 0; index < nodes.length; index += fields) {
    const type = types[nodes[index + typeAt]];
    // Strings and code by kind only: their names are their contents.
    const name = type === 'object' || type === 'native' || type === 'closure' ? `${type} ${snapshot.strings[nodes[index + nameAt]]}` : type;
    const group = groups.get(name) ?? { count: 0, bytes: 0 };
    group.count += 1;
    group.bytes += nodes[index + sizeAt];
    groups.set(name, group);
  }
  return groups;
}

const before = census(beforeFile);
const after = census(afterFile);
const names = new Set([...before.keys(), ...after.keys()]);
const rows = [...names]
  .map((name) => {
    const b = before.get(name) ?? { count: 0, bytes: 0 };
    const a = after.get(name) ?? { count: 0, bytes: 0 };
    return { name, count: a.count - b.count, bytes: a.bytes - b.bytes, total: a.count };
  })
  .sort((x, y) => y.bytes - x.bytes)
  .slice(0, Number(rowsText));
const sum = (groups) => [...groups.values()].reduce((total, group) => total + group.bytes, 0);
process.stdout.write(`heap: ${(sum(before) / 1048576).toFixed(1)} MB → ${(sum(after) / 1048576).toFixed(1)} MB\n`);
process.stdout.write(`${'grew (bytes)'.padStart(14)} ${'objects'.padStart(9)} ${'now'.padStart(9)}  what\n`);
for (const row of rows)
  process.stdout.write(
    `${String(row.bytes).padStart(14)} ${String(row.count).padStart(9)} ${String(row.total).padStart(9)}  ${row.name.slice(0, 100)}\n`,
  );
