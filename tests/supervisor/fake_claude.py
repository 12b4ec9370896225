#!/usr/bin/env python3
"""A stand-in for the `claude` CLI in tests.

It checks the flags the supervisor passes exactly as `claude -p` would need
them, reads the prompt from its argument or (as the supervisor sends it) from
stdin, then plays one step of a script and prints the CLI's JSON envelope.

- FAKE_CLAUDE_SCRIPT: a JSON file with a list of steps; call n plays step n
  (the last step repeats). The call counter and a log of every call
  (argv, cwd, pid) live in FAKE_CLAUDE_STATE (a directory).
- A step: {"write": {"rel/path": "content"}, "delete": ["rel/path"], "write_bytes": {"rel/path": "hex"},
           "stderr": "text", "report": {...}, "in_result": bool,
           "hang": bool, "children": n, "ignore_term": bool, "sleep": s,
           "tick": s, "until": "path", "garbage": bool, "is_error": bool, "envelope": {...}, "exit": n}

`report` becomes `structured_output` (or JSON text in `result` with
`in_result`).

Like the real CLI, with ANTHROPIC_BASE_URL set it talks to that server in
the Anthropic messages format (POST <base>/v1/messages, `Authorization:
Bearer $ANTHROPIC_AUTH_TOKEN` or `x-api-key: $ANTHROPIC_API_KEY`,
`anthropic-version`), with the --model (or ANTHROPIC_MODEL) and the prompt.
The model's answer drives the worker: a JSON object in its text with
`write`/`report` replaces those of the step. An HTTP error ends the run the
way the CLI does (an `is_error` envelope, exit code 1). Without
ANTHROPIC_BASE_URL nothing goes over the network. `hang` sleeps forever after spawning `children` sleeping
children (their pids go to <state>/pids); `sleep` + `tick` prints a dot
every `tick` seconds for `sleep` seconds (a long but live worker), or until the file `until` exists if it
comes first (a test ends the wait when it has seen what it waits for). `envelope`
is printed as it is, then the fake exits with `exit` (default 1).
"""

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

PERMISSION_MODES = {"acceptEdits", "bypassPermissions", "default", "plan", "dontAsk"}


def fail(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)
    sys.exit(2)


def parse(argv: list[str]) -> dict:
    """Flags as `claude` takes them: `-p` (print mode) takes no value; the prompt is the one
    positional argument or, without one, stdin (how the supervisor sends it)."""
    takes_value = {"--output-format", "--json-schema", "--permission-mode", "--allowedTools", "--max-turns", "--model"}
    flags: dict = {}
    positional: list[str] = []
    i = 0
    while i < len(argv):
        flag = argv[i]
        if flag == "-p":
            flags["-p"] = True
            i += 1
            continue
        if not flag.startswith("-"):
            positional.append(flag)
            i += 1
            continue
        if flag not in takes_value:
            fail(f"unknown option '{flag}'")
        if i + 1 >= len(argv):
            fail(f"option '{flag}' argument missing")
        if flag in flags:
            fail(f"option '{flag}' given twice")
        flags[flag] = argv[i + 1]
        i += 2
    for required in ("-p", "--output-format", "--json-schema", "--permission-mode", "--allowedTools", "--max-turns"):
        if required not in flags:
            fail(f"missing {required}")
    if len(positional) > 1:
        fail("more than one prompt argument")
    flags["prompt"] = positional[0] if positional else sys.stdin.read()
    flags["prompt_from"] = "argv" if positional else "stdin"
    if not flags["prompt"].strip():
        fail("empty prompt (no argument and nothing on stdin)")
    if flags["--output-format"] != "json":
        fail("--output-format must be json here")
    try:
        schema = json.loads(flags["--json-schema"])
    except ValueError:
        fail("--json-schema is not valid JSON")
    if not isinstance(schema, dict) or schema.get("type") != "object":
        fail("--json-schema must be an object schema")
    if flags["--permission-mode"] not in PERMISSION_MODES:
        fail(f"invalid --permission-mode {flags['--permission-mode']}")
    if not flags["--allowedTools"].strip():
        fail("--allowedTools is empty")
    if not flags["--max-turns"].isdigit() or int(flags["--max-turns"]) < 1:
        fail("--max-turns must be a positive integer")
    if "--model" in flags and not flags["--model"].strip():
        fail("--model is empty")
    return flags


def ask_model(flags: dict) -> dict:
    """One Anthropic messages-format request to ANTHROPIC_BASE_URL; returns the parsed response."""
    base = os.environ["ANTHROPIC_BASE_URL"].rstrip("/")
    headers = {"content-type": "application/json", "anthropic-version": "2023-06-01"}
    if os.environ.get("ANTHROPIC_AUTH_TOKEN"):
        headers["authorization"] = f"Bearer {os.environ['ANTHROPIC_AUTH_TOKEN']}"
    elif os.environ.get("ANTHROPIC_API_KEY"):
        headers["x-api-key"] = os.environ["ANTHROPIC_API_KEY"]
    body = {
        "model": flags.get("--model") or os.environ.get("ANTHROPIC_MODEL") or "claude-sonnet-4-5",
        "max_tokens": 8192,
        "system": "You are Claude Code, Anthropic's official CLI for Claude.",
        "messages": [{"role": "user", "content": [{"type": "text", "text": flags["prompt"]}]}],
    }
    request = urllib.request.Request(
        f"{base}/v1/messages", data=json.dumps(body).encode(), headers=headers, method="POST"
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def api_error(message: str) -> None:
    print(
        json.dumps(
            {
                "type": "result",
                "subtype": "success",
                "is_error": True,
                "result": f"API Error: {message}",
                "duration_ms": 0,
                "num_turns": 1,
                "session_id": f"fake-{os.getpid()}",
            }
        )
    )
    sys.exit(1)


def main() -> None:
    flags = parse(sys.argv[1:])
    state = os.environ.get("FAKE_CLAUDE_STATE")
    script_path = os.environ.get("FAKE_CLAUDE_SCRIPT")
    if not state or not script_path:
        fail("FAKE_CLAUDE_STATE and FAKE_CLAUDE_SCRIPT must be set")
    os.makedirs(state, exist_ok=True)
    with open(script_path) as handle:
        steps = json.load(handle)
    counter = os.path.join(state, "count")
    count = int(open(counter).read()) if os.path.exists(counter) else 0
    with open(counter, "w") as handle:
        handle.write(str(count + 1))
    step = steps[min(count, len(steps) - 1)]
    with open(os.path.join(state, "calls.jsonl"), "a") as handle:
        handle.write(
            json.dumps(
                {
                    "argv": sys.argv,
                    "cwd": os.getcwd(),
                    "pid": os.getpid(),
                    "pgid": os.getpgid(0),
                    "litellm": os.environ.get("LITELLM_BASE_URL"),
                    "step": count,
                    "anthropic_base_url": os.environ.get("ANTHROPIC_BASE_URL"),
                    "anthropic_api_key_set": bool(os.environ.get("ANTHROPIC_API_KEY")),
                    "prompt_from": flags["prompt_from"],
                    "prompt": flags["prompt"][:20000],
                    "env": sorted(os.environ),
                }
            )
            + "\n"
        )

    if os.environ.get("ANTHROPIC_BASE_URL"):
        try:
            answer = ask_model(flags)
        except urllib.error.HTTPError as exc:
            api_error(f"{exc.code} {exc.read().decode(errors='replace')[:500]}")
        except (urllib.error.URLError, OSError, ValueError) as exc:
            api_error(f"Connection error ({exc})")
        text = "".join(block.get("text", "") for block in answer.get("content", []) if block.get("type") == "text")
        try:
            decided = json.loads(text)
        except ValueError:
            decided = None
        if isinstance(decided, dict):
            step = {**step, **{key: decided[key] for key in ("write", "report") if key in decided}}

    started = time.monotonic()
    for rel, content in (step.get("write") or {}).items():
        os.makedirs(os.path.dirname(rel) or ".", exist_ok=True)
        with open(rel, "w") as handle:
            handle.write(content)
    for rel, hexdata in (step.get("write_bytes") or {}).items():
        os.makedirs(os.path.dirname(rel) or ".", exist_ok=True)
        with open(rel, "wb") as handle:
            handle.write(bytes.fromhex(hexdata))
    for rel in step.get("delete") or []:
        if os.path.exists(rel):
            os.remove(rel)

    if step.get("hang"):
        if step.get("ignore_term"):
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        pids = []
        for _ in range(step.get("children", 0)):
            child = subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    "import signal,time\n"
                    + ("signal.signal(signal.SIGTERM, signal.SIG_IGN)\n" if step.get("ignore_term") else "")
                    + "time.sleep(3600)",
                ]
            )
            pids.append(child.pid)
        # Written whole, then renamed into place: a test polling the file never reads it half written.
        partial = os.path.join(state, f"pids.{os.getpid()}.tmp")
        with open(partial, "w") as handle:
            json.dump([os.getpid(), *pids], handle)
        os.replace(partial, os.path.join(state, "pids"))
        while True:
            time.sleep(1)

    if step.get("sleep"):
        end = time.monotonic() + step["sleep"]
        while time.monotonic() < end and not (step.get("until") and os.path.exists(step["until"])):
            time.sleep(step.get("tick", 0.5))
            print(".", file=sys.stderr, flush=True)

    if step.get("stderr"):
        print(step["stderr"], file=sys.stderr, flush=True)
    if step.get("envelope") is not None:  # print this envelope as is (what the CLI prints when it cannot work)
        print(json.dumps(step["envelope"]))
        sys.exit(step.get("exit", 1))

    if step.get("garbage"):
        print("this is not json")
        return

    report = step.get("report", {})
    envelope = {
        "type": "result",
        "subtype": "error_during_execution" if step.get("is_error") else "success",
        "is_error": bool(step.get("is_error")),
        "duration_ms": int((time.monotonic() - started) * 1000),
        "duration_api_ms": 0,
        "num_turns": 3,
        "result": ("Done.\n```json\n" + json.dumps(report) + "\n```") if step.get("in_result") else "Done.",
        "session_id": f"fake-{os.getpid()}",
        "total_cost_usd": step.get("total_cost_usd", 0.0012),
        "usage": {"input_tokens": 120, "output_tokens": 40, "cache_read_input_tokens": 0},
    }
    if not step.get("in_result"):
        envelope["structured_output"] = report
    print(json.dumps(envelope))


if __name__ == "__main__":
    main()
