// A Hopper remote worker for Node 20 or later: fetch, no dependencies.
// Plain JavaScript with JSDoc types (tsc --checkJs reads them), so that
// Node runs it as it is; hopper-worker.d.ts declares it for TypeScript.
//
// It speaks Hopper's worker protocol (docs/workers.md): it registers its
// kinds, queues and slots, takes jobs with a long poll, runs each handler
// with an AbortSignal, renews their leases with a heartbeat, and
// completes or fails them. The signal aborts when the job is cancelled,
// its lease is lost, its timeout passes or a second SIGTERM comes; a
// quiet request stops the fetching, and stop (or SIGTERM/SIGINT) lets the
// running jobs end and leaves. A handler returns the result, or throws
// Permanent (no retry), RetryAfter, Snooze (again later, the attempt not
// counted; holdKey holds its key) or any other error (a retried failure);
// job.log(line) and job.output are kept with the attempt.
//
//   const w = new Worker({ url: "http://127.0.0.1:8080", token: process.env.HOPPER_TOKEN });
//   w.handle("send_email", async (job, signal) => {
//     if (!job.args?.to) throw new Permanent("no recipient"); // the dead-letter queue
//     return { sent: true };                                   // the job's result
//   });
//   await w.run();

import os from "node:os";

export const VERSION = "hopper-worker-node/1";

/** Throw it to fail the job for good: no retry, the dead-letter queue. */
export class Permanent extends Error {}

/** Throw it to retry the job after `seconds` instead of its backoff. */
export class RetryAfter extends Error {
  /** @param {string} message @param {number} seconds */
  constructor(message, seconds) {
    super(message);
    this.seconds = seconds;
  }
}

/** Throw it to run the job again after `seconds` without counting the
 * attempt (a rate limit met, say); with `holdKey` no other job of its key
 * starts before then either (the server's key hold). */
export class Snooze extends Error {
  /** @param {number} seconds @param {{reason?: string, holdKey?: boolean}} [o] */
  constructor(seconds, o = {}) {
    super(o.reason ?? "");
    this.seconds = seconds;
    this.holdKey = o.holdKey ?? false;
  }
}

/** An error answer of the server. */
export class APIError extends Error {
  /** @param {number} status @param {string} code @param {string} message */
  constructor(status, code, message) {
    super(`${status} ${code}: ${message}`);
    this.status = status;
    this.code = code;
  }
}

/** A duration of the API ("1m30s", "250ms", "3.3s") in milliseconds.
 * @param {string|number} d */
export function millis(d) {
  if (typeof d === "number") return d * 1000;
  const units = { h: 3600e3, m: 60e3, s: 1e3, ms: 1, us: 1e-3, "µs": 1e-3, ns: 1e-6 };
  let total = 0;
  for (const [, n, u] of d.matchAll(/([0-9.]+)(ms|us|µs|ns|h|m|s)/g)) total += Number(n) * units[u];
  return total;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * @typedef {{stdout?: string, stderr?: string, log?: string}} Output
 * @typedef {{id: number, kind: string, args?: any, attempt: number, queue: string, timeout?: string,
 *   output: Output, log: (line: string) => void}} Job
 * @typedef {(job: Job, signal: AbortSignal) => Promise<any>} Handler
 * @typedef {{job: Job, token: string, abort: AbortController, why?: string}} Running
 */

export class Worker {
  /** @param {{url: string, token?: string, queues?: string[], slots?: number, name?: string, wait?: number}} o */
  constructor(o) {
    this.url = o.url.replace(/\/$/, "") + "/api/v1";
    this.token = o.token;
    this.queues = o.queues ?? [];
    this.slots = o.slots ?? 4;
    this.name = o.name ?? "node";
    this.wait = o.wait ?? 20;
    /** @type {Record<string, Handler>} */
    this.handlers = {};
    /** @type {Map<string, Running>} */
    this.running = new Map();
    this.quiet = false;
    this.heartbeatMs = 3000;
    /** @type {string|undefined} */
    this.id = undefined;
    this.freed = () => {};
  }

  /** Register handler for kind. @param {string} kind @param {Handler} handler */
  handle(kind, handler) {
    this.handlers[kind] = handler;
    return this;
  }

  /** @param {string} method @param {string} path @param {any} [body] @param {number} [timeoutMs] */
  async call(method, path, body, timeoutMs = 10000) {
    const headers = { "Content-Type": "application/json" };
    if (this.token) headers.Authorization = `Bearer ${this.token}`;
    const res = await fetch(this.url + path, {
      method, headers, body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await res.text();
    const v = text ? JSON.parse(text) : undefined;
    if (!res.ok) throw new APIError(res.status, v?.error?.code ?? "http", v?.error?.message ?? text);
    return v;
  }

  async register() {
    const w = await this.call("POST", "/workers", {
      kinds: Object.keys(this.handlers).sort(), queues: this.queues, slots: this.slots,
      name: this.name, host: os.hostname(), pid: process.pid, version: VERSION,
    });
    this.id = w.id;
    this.heartbeatMs = millis(w.heartbeat_interval);
    this.wait = Math.min(this.wait, millis(w.max_wait) / 1000);
    console.log(`registered as ${w.id} (kinds ${w.kinds.join(",")})`);
  }

  /** @param {() => Promise<any>} fn */
  async retrying(fn) {
    for (let delay = 500; ; delay = Math.min(delay * 2, 10000)) {
      try {
        return await fn();
      } catch (e) {
        if (e instanceof APIError && [400, 401, 403].includes(e.status)) throw e;
        console.warn(`${e.message}; retrying in ${delay}ms`);
        await sleep(delay);
      }
    }
  }

  /** Work until stopped: by stop(), a stop request, or SIGTERM/SIGINT. */
  async run({ signals = true } = {}) {
    const onSignal = () => this.stop();
    if (signals) for (const s of ["SIGTERM", "SIGINT"]) process.on(s, onSignal);
    await this.retrying(() => this.register());
    const beat = setInterval(() => this.heartbeat(), this.heartbeatMs);
    while (!this.quiet) {
      const free = this.slots - this.running.size;
      if (free === 0) {
        await new Promise((r) => (this.freed = r));
        continue;
      }
      let res;
      try {
        res = await this.call("POST", `/workers/${this.id}/fetch`, { max: free, wait: this.wait }, (this.wait + 10) * 1000);
      } catch (e) {
        if (e instanceof APIError && e.status === 404) await this.retrying(() => this.register());
        else { console.warn(`fetch: ${e.message}`); await sleep(1000); }
        continue;
      }
      this.asked(res);
      for (const l of res.leases) this.start(l);
    }
    // Quiet: no more jobs. Wait for the running ones, then leave.
    while (this.running.size > 0) await new Promise((r) => (this.freed = r));
    clearInterval(beat);
    await this.call("DELETE", `/workers/${this.id}`).catch((e) => console.warn(`deregister: ${e.message}`));
    if (signals) for (const s of ["SIGTERM", "SIGINT"]) process.off(s, onSignal);
    console.log("stopped");
  }

  /** @param {{quiet?: boolean, stop?: boolean}} res */
  asked(res) {
    if (res.stop) this.stop();
    else if (res.quiet) this.quiet = true;
  }

  /** Take no more jobs and leave once the running ones end; called again
   * (a second signal), abort the running handlers. */
  stop() {
    const again = this.quiet;
    this.quiet = true;
    this.freed();
    if (again) for (const r of this.running.values()) this.cancel(r, "stop");
  }

  /** @param {Running} r @param {string} why */
  cancel(r, why) {
    if (r.why) return;
    r.why = why;
    r.abort.abort(new Error(why));
  }

  async heartbeat() {
    const tokens = [...this.running.keys()];
    let res;
    try {
      res = await this.call("POST", `/workers/${this.id}/heartbeat`, { tokens });
    } catch (e) {
      console.warn(`heartbeat: ${e.message}`);
      return;
    }
    for (const r of this.running.values()) if (res.cancel.includes(r.job.id)) this.cancel(r, "cancelled");
    for (const t of res.lost) { const r = this.running.get(t); if (r) this.cancel(r, "lost"); }
    this.asked(res);
  }

  /** @param {{job: Job, token: string}} lease */
  async start(lease) {
    /** @type {Running} */
    const r = { job: lease.job, token: lease.token, abort: new AbortController() };
    r.job.output = {};
    r.job.log = (line) => { r.job.output.log = (r.job.output.log ?? "") + line + "\n"; };
    this.running.set(r.token, r);
    const timer = r.job.timeout ? setTimeout(() => this.cancel(r, "timeout"), millis(r.job.timeout)) : undefined;
    let verb = "complete", out;
    try {
      out = { result: await this.handlers[r.job.kind](r.job, r.abort.signal) };
      if (r.why === "timeout") { verb = "fail"; out = { error: `timed out after ${r.job.timeout}` }; }
    } catch (e) {
      if (e instanceof Snooze) {
        verb = "snooze";
        out = { delay: e.seconds, reason: e.message, hold_key: e.holdKey };
      } else {
        verb = "fail";
        const plain = e instanceof Permanent || e instanceof RetryAfter;
        out = { error: plain ? e.message : String(e?.stack ?? e), permanent: e instanceof Permanent };
        if (e instanceof RetryAfter) out.retry_after = e.seconds;
      }
    }
    if (r.job.output && Object.keys(r.job.output).length > 0) out.output = r.job.output;
    clearTimeout(timer);
    try {
      if (r.why !== "lost") {
        const res = await this.call("POST", `/workers/${this.id}/${verb}`, { token: r.token, ...out });
        console.log(`job ${r.job.id} ${res.jobs[0].state}`);
      }
    } catch (e) {
      if (e instanceof APIError && e.status === 409) console.warn(`job ${r.job.id}: lease lost, outcome refused`);
      else console.error(`job ${r.job.id}: ${e.message} (its lease will expire and it will run again)`);
    } finally {
      this.running.delete(r.token);
      this.freed();
    }
  }
}
