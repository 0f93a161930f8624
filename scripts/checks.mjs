// The checks before the suite (npm test), at once: eslint, prettier and tsc each keep one core busy for 20-40 s, and
// none needs another's output, so on two cores running them side by side takes the longest one's time, not the sum.
// Each check's output is printed whole when it ends (not interleaved), and the exit is 1 when any failed.
// Run with: node scripts/checks.mjs <npm script>...
import { spawn } from 'node:child_process';

const names = process.argv.slice(2);
if (names.length === 0) {
  process.stderr.write('usage: node scripts/checks.mjs <npm script>...\n');
  process.exit(2);
}
process.stderr.write(`running ${names.map((name) => `npm run ${name}`).join(', ')} side by side…\n`);

const results = await Promise.all(
  names.map(
    (name) =>
      new Promise((resolve) => {
        const started = Date.now();
        const child = spawn('npm', ['run', '--silent', name], { stdio: ['ignore', 'pipe', 'pipe'] });
        const output = [];
        child.stdout.on('data', (chunk) => output.push(chunk));
        child.stderr.on('data', (chunk) => output.push(chunk));
        child.on('error', (error) => resolve({ name, code: 1, output: Buffer.from(`${error.message}\n`), seconds: 0 }));
        child.on('close', (code, signal) =>
          resolve({
            name,
            code: code ?? (signal === null ? 1 : 128),
            output: Buffer.concat(output),
            seconds: (Date.now() - started) / 1000,
          }),
        );
      }),
  ),
);

for (const { name, code, output, seconds } of results) {
  process.stderr.write(`${code === 0 ? 'ok  ' : 'FAIL'} npm run ${name} (${seconds.toFixed(1)} s${code === 0 ? '' : `, exit ${code}`})\n`);
  if (output.length > 0) process.stderr.write(output);
}
process.exitCode = results.every((result) => result.code === 0) ? 0 : 1;
