"""A Hopper remote worker in Python, standard library only (urllib, json).

It speaks Hopper's worker protocol (docs/workers.md): it registers its kinds,
queues and slots, takes jobs with a long poll, runs each in a thread,
renews their leases with a heartbeat, and completes or fails them.
Cancellation reaches a handler through ``job.cancelled`` (a threading.Event);
a quiet request stops the fetching, a stop request (or SIGTERM/SIGINT)
lets the running jobs end and leaves. A handler returns the result, or
raises Permanent (no retry), RetryAfter, Snooze (again later, the attempt
not counted; ``hold_key=True`` holds its key) or any other exception (a
retried failure); ``job.log(line)`` and ``job.output`` are kept with the
attempt. See example_worker.py.
"""

import json
import logging
import os
import signal
import socket
import threading
import time
import traceback
import urllib.error
import urllib.request

VERSION = "hopper-worker-python/1"
log = logging.getLogger("hopper_worker")


class Permanent(Exception):
    """Raise it to fail the job for good: no retry, the dead-letter queue."""


class RetryAfter(Exception):
    """Raise it to retry the job after ``seconds`` instead of its backoff."""

    def __init__(self, message, seconds):
        super().__init__(message)
        self.seconds = seconds


class Snooze(Exception):
    """Raise it to run the job again after ``seconds`` without counting the
    attempt (a rate limit met, say); with ``hold_key`` no other job of its
    key starts before then either (the server's key hold)."""

    def __init__(self, seconds, reason="", hold_key=False):
        super().__init__(reason)
        self.seconds, self.hold_key = seconds, hold_key


class APIError(Exception):
    """An error answer of the server: ``status`` and its ``code``."""

    def __init__(self, status, code, message):
        super().__init__("%d %s: %s" % (status, code, message))
        self.status, self.code = status, code


class Job:
    """A leased job. ``cancelled`` is set when the job is cancelled, its
    lease is lost, its timeout passes or the worker must stop: a long
    handler should check it and return."""

    def __init__(self, lease):
        self.raw = lease["job"]
        self.token = lease["token"]
        self.id = self.raw["id"]
        self.kind = self.raw["kind"]
        self.args = self.raw.get("args")
        self.attempt = self.raw["attempt"]
        self.cancelled = threading.Event()
        self.why = None  # why cancelled was set: "cancelled", "lost", "timeout", "stop"
        self.output = {}  # "stdout", "stderr", "log": kept with the attempt

    def log(self, line):
        """Add a line to the attempt's log, which the server keeps with it."""
        self.output["log"] = self.output.get("log", "") + str(line) + "\n"

    def cancel(self, why):
        if not self.cancelled.is_set():
            self.why = why
            self.cancelled.set()


def _seconds(d):
    """A duration of the API ("1m30s", "250ms", "3.3s") in seconds."""
    if isinstance(d, (int, float)):
        return float(d)
    total, num, i = 0.0, "", 0
    units = {"h": 3600, "m": 60, "s": 1, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
    while i < len(d):
        c = d[i]
        if c.isdigit() or c == ".":
            num += c
            i += 1
            continue
        u = d[i:i + 2] if d[i:i + 2] in units else c
        total += float(num) * units[u]
        num, i = "", i + len(u)
    return total


class Worker:
    def __init__(self, url, token=None, queues=(), slots=4, name=None, wait=20):
        self.url = url.rstrip("/") + "/api/v1"
        self.token = token
        self.queues, self.slots, self.wait = list(queues), slots, wait
        self.name = name or "python"
        self.handlers = {}
        self.id = None
        self.running = {}  # token -> Job
        self.lock = threading.Lock()
        self.free = threading.Semaphore(slots)
        self.quiet = threading.Event()   # take no more jobs
        self.stopping = threading.Event()  # leave once the running jobs end
        self.heartbeat_every = 3.0

    def handler(self, kind):
        """Decorator: register fn(job) for kind. Its return value (JSON) is
        the result; an exception fails the attempt."""
        def add(fn):
            self.handlers[kind] = fn
            return fn
        return add

    # --- HTTP -----------------------------------------------------------
    def _call(self, method, path, body=None, timeout=10):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Content-Type", "application/json")
        if self.token:
            req.add_header("Authorization", "Bearer " + self.token)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as res:
                b = res.read()
                return json.loads(b) if b else None
        except urllib.error.HTTPError as e:
            try:
                err = json.loads(e.read())["error"]
            except Exception:
                err = {"code": "http", "message": str(e)}
            raise APIError(e.code, err.get("code"), err.get("message")) from None

    def register(self):
        w = self._call("POST", "/workers", {
            "kinds": sorted(self.handlers), "queues": self.queues, "slots": self.slots,
            "name": self.name, "host": socket.gethostname(), "pid": os.getpid(), "version": VERSION})
        self.id = w["id"]
        self.heartbeat_every = _seconds(w["heartbeat_interval"])
        self.wait = min(self.wait, _seconds(w["max_wait"]))
        log.info("registered as %s (kinds %s)", self.id, ",".join(w["kinds"]))

    # --- the loops ------------------------------------------------------
    def run(self, install_signals=True):
        """Work until stopped: by stop(), a stop request, or SIGTERM/SIGINT.
        A fetch under way when a signal comes ends first (its wait, at
        most ``wait`` seconds); the jobs it brings are run too."""
        if install_signals:
            for s in (signal.SIGTERM, signal.SIGINT):
                signal.signal(s, lambda *_: self.stop())
        self._retrying(self.register)
        hb = threading.Thread(target=self._heartbeats, daemon=True)
        hb.start()
        while not self.quiet.is_set():
            self.free.acquire()
            if self.quiet.is_set():  # asked while every slot was busy
                self.free.release()
                break
            n = 1
            while n < self.slots and self.free.acquire(blocking=False):
                n += 1
            try:
                res = self._call("POST", "/workers/%s/fetch" % self.id,
                                 {"max": n, "wait": self.wait}, timeout=self.wait + 10)
            except APIError as e:
                self._release(n)
                if e.status == 404:  # forgotten by the server: register again
                    self._retrying(self.register)
                else:
                    log.warning("fetch: %s", e)
                    time.sleep(1)
                continue
            except OSError as e:
                self._release(n)
                log.warning("fetch: %s", e)
                time.sleep(1)
                continue
            self._asked(res)
            leases = res["leases"]
            self._release(n - len(leases))
            for lease in leases:
                job = Job(lease)
                with self.lock:
                    self.running[job.token] = job
                threading.Thread(target=self._run, args=(job,), daemon=True).start()
        # Quiet: no more jobs. Wait for the running ones, then leave.
        for _ in range(self.slots):
            self.free.acquire()
        self.stopping.set()
        try:
            self._call("DELETE", "/workers/%s" % self.id)
        except (APIError, OSError) as e:
            log.warning("deregister: %s", e)
        log.info("stopped")

    def _release(self, n):
        for _ in range(n):
            self.free.release()

    def _retrying(self, fn):
        delay = 0.5
        while True:
            try:
                return fn()
            except (APIError, OSError) as e:
                if isinstance(e, APIError) and e.status in (400, 401, 403):
                    raise
                log.warning("%s; retrying in %.1fs", e, delay)
                time.sleep(delay)
                delay = min(delay * 2, 10)

    def _asked(self, res):
        if res.get("stop"):
            self.stop()
        elif res.get("quiet"):
            self.quiet.set()

    def stop(self):
        """Take no more jobs and leave once the running ones end; called
        again (a second signal), tell the running handlers to stop."""
        again = self.quiet.is_set()
        self.quiet.set()
        if again:
            with self.lock:
                for job in self.running.values():
                    job.cancel("stop")

    def _heartbeats(self):
        while not self.stopping.wait(self.heartbeat_every):
            with self.lock:
                jobs = dict(self.running)
            try:
                res = self._call("POST", "/workers/%s/heartbeat" % self.id, {"tokens": list(jobs)})
            except (APIError, OSError) as e:
                log.warning("heartbeat: %s", e)
                continue
            byid = {j.id: j for j in jobs.values()}
            for jid in res["cancel"]:
                if jid in byid:
                    byid[jid].cancel("cancelled")
            for tok in res["lost"]:
                if tok in jobs:
                    jobs[tok].cancel("lost")
            self._asked(res)

    def _run(self, job):
        timeout = job.raw.get("timeout")
        timer = None
        if timeout:
            timer = threading.Timer(_seconds(timeout), job.cancel, args=("timeout",))
            timer.start()
        try:
            out = {"result": self.handlers[job.kind](job)}
            verb = "complete"
        except Snooze as e:
            verb, out = "snooze", {"delay": e.seconds, "reason": str(e), "hold_key": e.hold_key}
        except Exception as e:  # the attempt failed
            verb = "fail"
            out = {"error": str(e) or type(e).__name__, "permanent": isinstance(e, Permanent)}
            if isinstance(e, RetryAfter):
                out["retry_after"] = e.seconds
            if not isinstance(e, (Permanent, RetryAfter)):
                out["error"] += "\n" + traceback.format_exc(limit=5)
        if timer:
            timer.cancel()
        if job.why == "timeout" and verb == "complete":
            verb, out = "fail", {"error": "timed out after %s" % timeout}
        out["token"] = job.token
        if job.output:
            out["output"] = job.output
        try:
            if job.why != "lost":
                res = self._call("POST", "/workers/%s/%s" % (self.id, verb), out)
                log.info("job %s %s", job.id, res["jobs"][0]["state"])
        except APIError as e:
            if e.status == 409:
                log.warning("job %s: lease lost, outcome refused", job.id)
            else:
                log.error("job %s: %s", job.id, e)
        except OSError as e:
            log.error("job %s: %s (its lease will expire and it will run again)", job.id, e)
        finally:
            with self.lock:
                self.running.pop(job.token, None)
            self.free.release()
