#!/usr/bin/env python3
"""A client of Hopper's HTTP API in Python's standard library only (urllib):
enqueues, lists, gets and cancels jobs, and checks an error response.

Usage: api_client.py BASE_URL TOKEN
Prints one line per step and "ok" at the end; exits 1 at the first surprise.
"""
import json
import sys
import urllib.error
import urllib.request

BASE, TOKEN = sys.argv[1].rstrip("/"), sys.argv[2]


def call(method, path, body=None):
    """Sends a request and returns (status, decoded JSON body)."""
    data = None if body is None else json.dumps(body).encode("utf-8")
    req = urllib.request.Request(BASE + path, data=data, method=method)
    req.add_header("Authorization", "Bearer " + TOKEN)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=30) as res:
            return res.status, json.load(res)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)


def expect(cond, what, got):
    if not cond:
        print("FAIL: %s; got %r" % (what, got))
        sys.exit(1)
    print("ok: " + what)


status, first = call("POST", "/api/v1/jobs", {"kind": "remote", "args": {"to": "ada@example.com", "n": 1}, "queue": "py", "priority": -1})
expect(status == 201 and first["state"] == "available" and not first["duplicate"], "enqueue a job", (status, first))

status, later = call("POST", "/api/v1/jobs", {"kind": "remote", "args": [1, 2, 3], "queue": "py", "delay": "1h", "max_attempts": 3})
expect(status == 201 and later["state"] == "scheduled", "enqueue a delayed job", (status, later))

status, page = call("GET", "/api/v1/jobs?queue=py&state=waiting&limit=1")
expect(status == 200 and [j["id"] for j in page["jobs"]] == [first["id"]] and page["next_cursor"] == str(first["id"]),
       "list the first page", (status, page))
status, page2 = call("GET", "/api/v1/jobs?queue=py&state=waiting&limit=1&cursor=" + page["next_cursor"])
expect(status == 200 and [j["id"] for j in page2["jobs"]] == [later["id"]] and "next_cursor" not in page2,
       "list the second page", (status, page2))

status, job = call("GET", "/api/v1/jobs/%d" % later["id"])
expect(status == 200 and job["args"] == [1, 2, 3] and job["max_attempts"] == 3 and job["state"] == "scheduled",
       "get a job", (status, job))

status, job = call("POST", "/api/v1/jobs/%d/cancel" % later["id"])
expect(status == 200 and job["state"] == "cancelled", "cancel a job", (status, job))

status, count = call("GET", "/api/v1/jobs/count?queue=py&state=cancelled")
expect(status == 200 and count == {"count": 1}, "count the cancelled", (status, count))

status, err = call("POST", "/api/v1/jobs", {"kind": "remote", "run_at": "tomorrow"})
expect(status == 400 and err["error"]["code"] == "invalid" and err["error"]["field"] == "run_at",
       "a bad run_at is refused naming the field", (status, err))

print("ok")
