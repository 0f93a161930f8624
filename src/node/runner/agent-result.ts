// Where an agent's result comes from (docs/sections/agent-upload.md "The runtime contract", docs/api.md "Run logs"):
// the file named by SWARM_RESULT_FILE when the agent wrote one, else its stdout as before. Either way stdout is in
// the run's log too, so an agent that writes its result to the file may print what it likes.
import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import { join } from 'node:path';

/** The result file's name in the run's directory (SWARM_RESULT_FILE is its whole path, as the agent sees it). */
export const RESULT_FILE_NAME = 'swarm-result.json';

export function resultFileIn(runDir: string): string {
  return join(runDir, RESULT_FILE_NAME);
}

/** What the launcher sends on its result channel before the file's bytes, when the agent wrote the file. */
export const RESULT_PRESENT_MARK = 'R';

export type AgentAnswer = { kind: 'output'; output: unknown } | { kind: 'bad_output'; message: string };

export interface AnswerSources {
  /** The result file's bytes (at most `maxBytes` + 1), or undefined when the agent wrote none. */
  file: Buffer | undefined;
  /** The first `maxBytes` of stdout; `overflowed`: it wrote more. */
  stdout: Buffer;
  stdoutOverflowed: boolean;
  maxBytes: number;
}

/** The agent's one JSON document, from the file when there is one, else from stdout. */
export function answerOf(sources: AnswerSources): AgentAnswer {
  const { file, maxBytes } = sources;
  if (file !== undefined) {
    if (file.length > maxBytes)
      return { kind: 'bad_output', message: `the agent's result file (SWARM_RESULT_FILE) is larger than ${maxBytes} bytes` };
    return parsed(file, "the agent's result file (SWARM_RESULT_FILE) is not one JSON document");
  }
  if (sources.stdoutOverflowed)
    return { kind: 'bad_output', message: `the agent wrote more than ${maxBytes} bytes on stdout and no result file (SWARM_RESULT_FILE)` };
  return parsed(sources.stdout, 'the agent did not answer with one JSON document on stdout (or in SWARM_RESULT_FILE)');
}

function parsed(bytes: Buffer, message: string): AgentAnswer {
  const text = bytes.toString('utf8').trim();
  try {
    if (text === '') throw new Error('empty');
    return { kind: 'output', output: JSON.parse(text) as unknown };
  } catch {
    return { kind: 'bad_output', message };
  }
}

/** The launcher's report on its result channel: the file's bytes after the mark, or undefined without the mark. */
export function fileFromReport(report: Buffer): Buffer | undefined {
  return report.length > 0 && report[0] === RESULT_PRESENT_MARK.charCodeAt(0) ? report.subarray(1) : undefined;
}

/**
 * The result file read here (a run directory on this host: the launcher became the agent and reports nothing): a
 * regular file only, at most `maxBytes` + 1 bytes. Opened without following a link and without blocking, so a FIFO
 * or a link the agent left there cannot hold the node.
 */
export function readResultFile(path: string, maxBytes: number): Buffer | undefined {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return undefined;
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) return undefined;
    const buffer = Buffer.alloc(Math.min(stat.size, maxBytes) + 1);
    let length = 0;
    while (length < buffer.length) {
      const read = readSync(fd, buffer, length, buffer.length - length, null);
      if (read === 0) break;
      length += read;
    }
    return buffer.subarray(0, length);
  } finally {
    closeSync(fd);
  }
}
