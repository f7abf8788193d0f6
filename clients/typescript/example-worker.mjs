// An example Hopper worker: node example-worker.mjs [--url URL] [--slots N] [--queues Q1,Q2]
//
// Kinds: echo (returns its args, logs a line), flaky (fails until its third attempt),
// snooze (snoozed once, holding its key, then completes),
// reject (fails permanently), slow (works until aborted or args.seconds
// pass), crash (on its first attempt the process exits at once: its job is
// rescued when its lease expires; later attempts complete). The token comes from $HOPPER_TOKEN.
import { parseArgs } from "node:util";
import { Permanent, RetryAfter, Snooze, Worker } from "./hopper-worker.mjs";

const { values: a } = parseArgs({
  options: {
    url: { type: "string", default: process.env.HOPPER_URL ?? "http://127.0.0.1:8080" },
    slots: { type: "string", default: "4" },
    queues: { type: "string", default: "" },
    wait: { type: "string", default: "20" },
  },
});

const w = new Worker({
  url: a.url, token: process.env.HOPPER_TOKEN, slots: Number(a.slots), wait: Number(a.wait),
  queues: a.queues.split(",").filter(Boolean), name: "example-node",
});

w.handle("echo", async (job) => {
  job.log("echoing"); // kept with the attempt: hopper jobs output ID
  return { echo: job.args, attempt: job.attempt };
});
w.handle("flaky", async (job) => {
  if (job.attempt < 3) throw new RetryAfter(`not yet (attempt ${job.attempt})`, 0.1);
  return `ok at attempt ${job.attempt}`;
});
w.handle("snooze", async (job) => {
  if (!job.attempts) { // its first run: a snoozed attempt is kept in the history
    job.log("rate limited: back in 0.2s");
    throw new Snooze(0.2, { reason: "429 Too Many Requests", holdKey: true });
  }
  return "ran after a snooze";
});
w.handle("reject", async (job) => { throw new Permanent(`rejected: ${JSON.stringify(job.args)}`); });
w.handle("slow", (job, signal) => new Promise((resolve, reject) => {
  const seconds = job.args?.seconds ?? 60;
  console.log(`started slow job ${job.id}`);
  const t = setTimeout(() => resolve(`slept ${seconds}s`), seconds * 1000);
  signal.addEventListener("abort", () => { clearTimeout(t); reject(new Error(`stopped: ${signal.reason.message}`)); });
}));
w.handle("crash", async (job) => {
  if (job.attempt > 1) return `survived attempt ${job.attempt}`;
  console.log(`crashing on job ${job.id}`);
  process.exit(3);
});

await w.run();
