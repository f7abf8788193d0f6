"""An example Hopper worker: python3 example_worker.py [--url URL] [--slots N] [--queues Q1,Q2]

Kinds: echo (returns its args, logs a line), flaky (fails until its third attempt),
snooze (snoozed once, holding its key, then completes),
reject (fails permanently), slow (works until cancelled or args.seconds
pass), crash (on its first attempt the process exits at once: its job is
rescued when its lease expires; later attempts complete). The token comes from $HOPPER_TOKEN.
"""

import argparse
import logging
import os
import sys

from hopper_worker import Permanent, RetryAfter, Snooze, Worker

p = argparse.ArgumentParser()
p.add_argument("--url", default=os.environ.get("HOPPER_URL", "http://127.0.0.1:8080"))
p.add_argument("--slots", type=int, default=4)
p.add_argument("--queues", default="")
p.add_argument("--wait", type=float, default=20)
a = p.parse_args()
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", stream=sys.stdout)

w = Worker(a.url, token=os.environ.get("HOPPER_TOKEN"), slots=a.slots, wait=a.wait,
           queues=[q for q in a.queues.split(",") if q], name="example-python")


@w.handler("echo")
def echo(job):
    job.log("echoing")  # kept with the attempt: hopper jobs output ID
    return {"echo": job.args, "attempt": job.attempt}


@w.handler("flaky")
def flaky(job):
    if job.attempt < 3:
        raise RetryAfter("not yet (attempt %d)" % job.attempt, 0.1)
    return "ok at attempt %d" % job.attempt


@w.handler("snooze")
def snooze(job):
    if not job.raw.get("attempts"):  # its first run: a snoozed attempt is kept in the history
        job.log("rate limited: back in 0.2s")
        raise Snooze(0.2, "429 Too Many Requests", hold_key=True)
    return "ran after a snooze"


@w.handler("reject")
def reject(job):
    raise Permanent("rejected: " + str(job.args))


@w.handler("slow")
def slow(job):
    seconds = (job.args or {}).get("seconds", 60)
    print("started slow job %d" % job.id, flush=True)
    if job.cancelled.wait(seconds):
        raise Exception("stopped: " + job.why)
    return "slept %ss" % seconds


@w.handler("crash")
def crash(job):
    if job.attempt > 1:
        return "survived attempt %d" % job.attempt
    print("crashing on job %d" % job.id, flush=True)
    os._exit(3)


w.run()
