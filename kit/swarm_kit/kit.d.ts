// Types of the agent kit for JavaScript and TypeScript (./kit.mjs, kit/README.md).

/** The protocol this kit's calls are written to. */
export declare const KIT_PROTOCOL: number;

/** A call the node refused: `code` names the rule (kit_rate_limited, kit_message_too_large, …). */
export declare class KitError extends Error {
  readonly code: string;
  readonly remedy: string;
  constructor(code: string, message: string, remedy?: string);
}

/** A bad input: the run fails, refunded, with this message. */
export declare class InputError extends Error {}

export interface Run<Input = Record<string, unknown>> {
  run_id: string;
  agent_id: string;
  user_id: string;
  tier: string;
  input: Input;
  /** 1 for the first attempt; a retry-safe run lost with its node runs again with the next. */
  attempt: number;
  /** The node's kit protocol; 0 where the node gives no kit channel. */
  protocol: number;
}

export type EventType = 'progress' | 'output' | 'tokens' | 'custom';

export declare function start<Input = Record<string, unknown>>(): Promise<Run<Input>>;
export declare function log(text: unknown): void;
export declare function event(type: EventType, data?: unknown, name?: string): Promise<{ seq: number | null }>;
export declare function progress(done: number, total?: number, message?: string): Promise<{ seq: number | null }>;
export declare function artifact(name: string, content: string | Uint8Array): string;
export declare function result(output: unknown): Promise<void>;
export declare function partial(output: Record<string, unknown>): Promise<void>;
export declare function fail(message: string): Promise<void>;
export declare function call(op: string, fields?: Record<string, unknown>, protocol?: number): Promise<Record<string, unknown>>;
export declare function runAgent<Input = Record<string, unknown>>(
  work: (input: Input, run: Run<Input>) => unknown | Promise<unknown>,
): Promise<void>;
