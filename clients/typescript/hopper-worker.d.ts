// Types of hopper-worker.mjs, for TypeScript programs that import it.

export declare const VERSION: string;
export declare class Permanent extends Error {}
export declare class RetryAfter extends Error {
  constructor(message: string, seconds: number);
  seconds: number;
}
export declare class Snooze extends Error {
  constructor(seconds: number, o?: { reason?: string; holdKey?: boolean });
  seconds: number;
  holdKey: boolean;
}
export declare class APIError extends Error {
  constructor(status: number, code: string, message: string);
  status: number;
  code: string;
}
export declare function millis(d: string | number): number;

/** A leased job, as the server sent it (docs/api.md, Job). */
export interface Job {
  id: number;
  kind: string;
  args?: unknown;
  queue: string;
  attempt: number;
  max_attempts: number;
  timeout?: string;
  /** What the attempt wrote, kept with it on the server (each optional). */
  output: { stdout?: string; stderr?: string; log?: string };
  /** Adds a line to output.log. */
  log(line: string): void;
  [field: string]: unknown;
}

/** Runs one attempt; its result (JSON) completes the job, a throw fails it
 * (Snooze: again later, the attempt not counted).
 * signal aborts when the job is cancelled, its lease lost or its timeout passed. */
export type Handler = (job: Job, signal: AbortSignal) => Promise<unknown>;

export interface WorkerOptions {
  url: string;
  token?: string;
  queues?: string[];
  slots?: number;
  name?: string;
  /** Seconds a fetch waits for a job (at most the server's max_wait, 30s). */
  wait?: number;
}

export declare class Worker {
  constructor(o: WorkerOptions);
  id?: string;
  handle(kind: string, handler: Handler): this;
  run(o?: { signals?: boolean }): Promise<void>;
  stop(): void;
}
