"""The load generator of choice: wrk, with a Lua script per kind of load.

wrk is written in C and costs the server's two cores little. One thread
drives all connections; the multi-step flows keep their state (codes waiting
to be exchanged, refresh tokens waiting to be used) in that thread's Lua state.
A ``done`` hook prints one ``BENCH-RESULT`` JSON line that this module reads.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from bench import BenchError, say
from bench.load import Load, Result

PRELUDE = r"""
local threads = {}
function setup(thread)
  thread:set("tid", #threads)
  table.insert(threads, thread)
end

statuses = {}
local function count(status)
  local key = tostring(status)
  statuses[key] = (statuses[key] or 0) + 1
end
"""

DONE = r"""
function done(summary, latency, requests)
  local merged = {}
  for _, t in ipairs(threads) do
    for k, v in pairs(t:get("statuses")) do merged[k] = (merged[k] or 0) + v end
  end
  local parts = {}
  for k, v in pairs(merged) do parts[#parts + 1] = string.format('"%s":%d', k, v) end
  local e = summary.errors
  io.write(string.format(
    'BENCH-RESULT {"requests":%d,"duration_us":%d,"p50_us":%.0f,"p95_us":%.0f,"p99_us":%.0f,' ..
    '"socket_errors":%d,"statuses":{%s}}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(95), latency:percentile(99),
    e.connect + e.read + e.write + e.timeout, table.concat(parts, ",")))
end
"""

STATIC = r"""
wrk.method = {method}
wrk.body = {body}
{headers}
function response(status, headers, body) count(status) end
"""

BEARER = r"""
local tokens = {}
function init(args)
  for line in io.lines(args[1]) do
    if #line > 0 then tokens[#tokens + 1] = line end
  end
  math.randomseed(os.time() * 1000 + tid)
end
function request()
  return wrk.format("GET", nil, {["Authorization"] = "Bearer " .. tokens[math.random(#tokens)]})
end
function response(status, headers, body) count(status) end
"""

HOSTS = r"""
local hosts = {}
function init(args)
  for line in io.lines(args[1]) do
    if #line > 0 then hosts[#hosts + 1] = line end
  end
  math.randomseed(os.time() * 1000 + tid)
end
function request()
  return wrk.format("GET", nil, {["Host"] = hosts[math.random(#hosts)]})
end
function response(status, headers, body) count(status) end
"""

CODE_FLOW = r"""
local codes = {{}}
local exchange_body = {exchange_body}
local authorize_headers = {headers}
function request()
  local code = table.remove(codes)
  if code then
    if exchange_body ~= "" then
      return wrk.format("POST", {exchange_prefix},
        {{["Content-Type"] = "application/x-www-form-urlencoded"}}, exchange_body .. code)
    end
    return wrk.format("POST", {exchange_prefix} .. code, {{}}, "")
  end
  local h = {{}}
  for k, v in pairs(authorize_headers) do h[k] = v end
  return wrk.format("GET", {path}, h)
end
function response(status, headers, body)
  count(status)
  if status == 302 then
    local location = headers["Location"] or headers["location"]
    local code = location and location:match("[?&]code=([^&]+)")
    if code then codes[#codes + 1] = code end
  end
end
"""

REFRESH = r"""
-- A queue: tokens are taken at head and the new ones added at tail.
local pool = {{}}
local head, tail = 1, 0
starved = 0
function init(args)
  for line in io.lines(args[1] .. tid) do
    if #line > 0 then tail = tail + 1; pool[tail] = line end
  end
end
function request()
  local t = nil
  if head <= tail then
    t = pool[head]
    pool[head] = nil
    head = head + 1
  else
    starved = starved + 1
    t = "none-left"
  end
  return wrk.format("POST", {token_path},
    {{["Content-Type"] = "application/x-www-form-urlencoded"}},
    "grant_type=refresh_token&client_id=" .. {client_id} .. "&refresh_token=" .. t)
end
function response(status, headers, body)
  count(status)
  if status == 200 then
    local r = body:match('"refresh_token"%s*:%s*"([^"]+)"')
    if r then tail = tail + 1; pool[tail] = r end
  end
end
"""


ONCE = r"""
local pool = {{}}
starved = 0
function init(args)
  for line in io.lines(args[1] .. tid) do
    if #line > 0 then pool[#pool + 1] = line end
  end
end
local fixed = {headers}
local secret_header = {secret_header}
function request()
  local t = table.remove(pool)
  if not t then starved = starved + 1; t = "none-left" end
  local h = {{}}
  for k, v in pairs(fixed) do h[k] = v end
  if secret_header ~= "" then
    h[secret_header] = t
    return wrk.format({method}, {path}, h, {body_or_nil})
  end
  h["Content-Type"] = h["Content-Type"] or "application/x-www-form-urlencoded"
  return wrk.format({method}, {path}, h, {body} .. t)
end
function response(status, headers, body) count(status) end
"""


def lua_string(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def lua_table(values: dict[str, str]) -> str:
    return "{" + ", ".join(f"[{lua_string(k)}] = {lua_string(v)}" for k, v in values.items()) + "}"


def find() -> str | None:
    """wrk's path; installed from Debian's packages when missing and running as root."""
    path = shutil.which("wrk")
    if path or os.geteuid() != 0 or not shutil.which("apt-get"):
        return path
    say("wrk is missing; installing it from Debian's packages")
    for command in (
        ["apt-get", "install", "-y", "-q", "wrk"],
        ["apt-get", "update", "-q"],
        ["apt-get", "install", "-y", "-q", "wrk"],
    ):
        subprocess.run(command, capture_output=True, env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
        path = shutil.which("wrk")
        if path:
            return path
    return None


class Wrk:
    name = "wrk"

    def __init__(self, binary: str, work_dir: Path, threads: int = 1):
        self.binary = binary
        self.work_dir = work_dir
        self.threads = threads

    def _script(self, load: Load) -> tuple[str, list[str]]:
        args: list[str] = []
        if load.kind == "static":
            headers = "\n".join(f"wrk.headers[{lua_string(k)}] = {lua_string(v)}" for k, v in load.headers.items())
            body = STATIC.format(
                method=lua_string(load.method), body=lua_string(load.body) if load.body else "nil", headers=headers
            )
        elif load.kind == "bearer":
            tokens = self.work_dir / f"{load.name}.tokens"
            tokens.write_text("\n".join(load.secrets) + "\n")
            args.append(str(tokens))
            body = BEARER
        elif load.kind == "hosts":
            hosts = self.work_dir / f"{load.name}.hosts"
            hosts.write_text("\n".join(load.secrets) + "\n")
            args.append(str(hosts))
            body = HOSTS
        elif load.kind == "code_flow":
            body = CODE_FLOW.format(
                headers=lua_table(load.headers),
                exchange_prefix=lua_string(load.exchange_prefix),
                exchange_body=lua_string(load.exchange_body),
                path=lua_string(load.path),
            )
        elif load.kind == "refresh":
            prefix = self.work_dir / f"{load.name}.refresh."
            for t in range(self.threads):
                Path(f"{prefix}{t}").write_text("\n".join(load.secrets[t :: self.threads]) + "\n")
            args.append(str(prefix))
            body = REFRESH.format(client_id=lua_string(load.client_id), token_path=lua_string(load.token_path))
        elif load.kind == "once":
            prefix = self.work_dir / f"{load.name}.once."
            for t in range(self.threads):
                Path(f"{prefix}{t}").write_text("\n".join(load.secrets[t :: self.threads]) + "\n")
            args.append(str(prefix))
            body = ONCE.format(
                method=lua_string(load.method),
                path=lua_string(load.path),
                body=lua_string(load.body),
                body_or_nil=lua_string(load.body) if load.body else "nil",
                headers=lua_table(load.headers),
                secret_header=lua_string(load.secret_header),
            )
        else:
            raise ValueError(load.kind)
        return PRELUDE + body + DONE, args

    def run(self, load: Load, duration: float) -> Result:
        script, args = self._script(load)
        script_path = self.work_dir / f"{load.name}.lua"
        script_path.write_text(script)
        connections = max(load.connections, self.threads)
        argv = [
            self.binary,
            f"-t{self.threads}",
            f"-c{connections}",
            f"-d{max(1, round(duration))}s",
            f"--timeout={load.timeout:.0f}s",
            "-s",
            str(script_path),
            f"http://127.0.0.1:{load.port}{load.path if load.kind != 'code_flow' else '/'}",
            "--",
            *args,
        ]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=duration + load.timeout + 60)
        line = next((x for x in done.stdout.splitlines() if x.startswith("BENCH-RESULT ")), None)
        if done.returncode != 0 or line is None:
            raise BenchError(f"wrk failed on {load.name}:\n{done.stdout}\n{done.stderr}")
        data = json.loads(line.removeprefix("BENCH-RESULT "))
        statuses = {str(k): int(v) for k, v in data["statuses"].items()}
        return Result(
            name=load.name,
            generator=self.name,
            duration=data["duration_us"] / 1e6,
            requests=sum(statuses.values()),
            ok=sum(n for s, n in statuses.items() if int(s) in load.ok),
            p50_ms=data["p50_us"] / 1000,
            p99_ms=data["p99_us"] / 1000,
            p95_ms=data["p95_us"] / 1000,
            statuses=statuses,
            socket_errors=data["socket_errors"],
            connections=connections,
        )
