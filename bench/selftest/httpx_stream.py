#!/usr/bin/python3
"""A plain streaming client in another language: N concurrent chat streams
against an OpenAI-compatible endpoint, with Debian's python3-httpx
(run it with /usr/bin/python3). It checks that every stream ends with
[DONE] after a finish reason, that usage arrives with choices: [], and
that completion_tokens matches the request; it prints one JSON line.

    /usr/bin/python3 bench/selftest/httpx_stream.py --base-url http://127.0.0.1:30000/v1 -n 512
"""
import argparse
import asyncio
import json
import time

import httpx


async def one(client, url, model, i, max_tokens, nonce, timings):
    body = {
        "model": model,
        "messages": [{"role": "user", "content": f"{nonce}-{i:06d} tell me something"}],
        "max_tokens": max_tokens,
        "stream": True,
        "stream_options": {"include_usage": True},
        "ignore_eos": True,
    }
    events, finish, usage, done = 0, None, None, False
    stamps = []
    t0 = time.perf_counter()
    t0_unix = time.time()
    first = None
    async with client.stream("POST", url, json=body) as r:
        if r.status_code != 200:
            return {"ok": False, "why": f"HTTP {r.status_code}: {(await r.aread())[:200]!r}"}
        async for line in r.aiter_lines():
            if not line.startswith("data:"):
                continue
            data = line[5:].strip()
            if data == "[DONE]":
                done = True
                break
            chunk = json.loads(data)
            if "error" in chunk:
                return {"ok": False, "why": f"error event: {data[:200]}"}
            if chunk.get("usage") and chunk.get("choices") == []:
                usage = chunk["usage"]
            for c in chunk.get("choices", []):
                d = c.get("delta", {})
                if d.get("content") or d.get("reasoning_content"):
                    events += 1
                    stamps.append(time.perf_counter() - t0)
                    if first is None:
                        first = stamps[-1]
                if c.get("finish_reason"):
                    finish = c["finish_reason"]
    if not done or finish is None or usage is None:
        return {"ok": False, "why": f"done={done} finish={finish} usage={usage}"}
    if usage["completion_tokens"] != max_tokens:
        return {"ok": False, "why": f"completion_tokens {usage['completion_tokens']} != {max_tokens}"}
    if timings is not None:
        timings.append({"key": f"{nonce}-{i:06d}", "t0_unix": t0_unix, "events": stamps})
    return {"ok": True, "events": events, "ttft": first}


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base-url", default="http://127.0.0.1:30000/v1")
    ap.add_argument("--model", default=None)
    ap.add_argument("-n", type=int, default=512)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--nonce", default="00000000", help="8 hex characters that start every prompt, as glmbench's")
    ap.add_argument("--timings", default=None, help="write each request's send time (t0_unix) and event times (seconds from t0) as JSONL")
    a = ap.parse_args()
    timings = [] if a.timings else None
    limits = httpx.Limits(max_connections=a.n, max_keepalive_connections=a.n)
    async with httpx.AsyncClient(timeout=httpx.Timeout(600.0), limits=limits) as client:
        model = a.model
        if model is None:
            model = (await client.get(a.base_url + "/models")).json()["data"][0]["id"]
        t = time.perf_counter()
        cpu = time.process_time()
        res = await asyncio.gather(*[one(client, a.base_url + "/chat/completions", model, i, a.max_tokens, a.nonce, timings)
                                     for i in range(a.n)], return_exceptions=True)
        wall = time.perf_counter() - t
        cpu = time.process_time() - cpu
    if timings is not None:
        with open(a.timings, "w") as f:
            for t in timings:
                f.write(json.dumps(t) + "\n")
    errors = [r if isinstance(r, dict) else {"ok": False, "why": repr(r)} for r in res]
    bad = [r for r in errors if not r["ok"]]
    events = sum(r.get("events", 0) for r in errors if r["ok"])
    print(json.dumps({"requests": a.n, "ok": a.n - len(bad), "errors": len(bad), "wall_sec": round(wall, 3),
                      "events": events, "cpu_sec": round(cpu, 3), "first_errors": [r["why"] for r in bad[:5]]}))
    raise SystemExit(1 if bad else 0)


asyncio.run(main())
