#!/usr/bin/python3
"""A plain streaming client in another language: N concurrent chat streams
against an OpenAI-compatible endpoint, with Debian's python3-httpx
(run it with /usr/bin/python3). It checks that every stream ends with
[DONE] after a finish reason, that usage arrives with choices: [], and
that completion_tokens matches the request; it prints one JSON line.

    /usr/bin/python3 scripts/httpx_stream.py --base-url http://127.0.0.1:30000/v1 -n 512
"""
import argparse
import asyncio
import json
import time

import httpx


async def one(client, url, model, i, max_tokens):
    body = {
        "model": model,
        "messages": [{"role": "user", "content": f"request {i:06d}: tell me something"}],
        "max_tokens": max_tokens,
        "stream": True,
        "stream_options": {"include_usage": True},
        "ignore_eos": True,
    }
    events, finish, usage, done = 0, None, None, False
    t0 = time.perf_counter()
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
                    if first is None:
                        first = time.perf_counter() - t0
                if c.get("finish_reason"):
                    finish = c["finish_reason"]
    if not done or finish is None or usage is None:
        return {"ok": False, "why": f"done={done} finish={finish} usage={usage}"}
    if usage["completion_tokens"] != max_tokens:
        return {"ok": False, "why": f"completion_tokens {usage['completion_tokens']} != {max_tokens}"}
    return {"ok": True, "events": events, "ttft": first}


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base-url", default="http://127.0.0.1:30000/v1")
    ap.add_argument("--model", default=None)
    ap.add_argument("-n", type=int, default=512)
    ap.add_argument("--max-tokens", type=int, default=64)
    a = ap.parse_args()
    limits = httpx.Limits(max_connections=a.n, max_keepalive_connections=a.n)
    async with httpx.AsyncClient(timeout=httpx.Timeout(600.0), limits=limits) as client:
        model = a.model
        if model is None:
            model = (await client.get(a.base_url + "/models")).json()["data"][0]["id"]
        t = time.perf_counter()
        res = await asyncio.gather(*[one(client, a.base_url + "/chat/completions", model, i, a.max_tokens) for i in range(a.n)],
                                   return_exceptions=True)
        wall = time.perf_counter() - t
    errors = [r if isinstance(r, dict) else {"ok": False, "why": repr(r)} for r in res]
    bad = [r for r in errors if not r["ok"]]
    print(json.dumps({"requests": a.n, "ok": a.n - len(bad), "errors": len(bad), "wall_sec": round(wall, 2),
                      "first_errors": [r["why"] for r in bad[:5]]}))
    raise SystemExit(1 if bad else 0)


asyncio.run(main())
