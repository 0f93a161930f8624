"""The swarm-node agent kit for Python (kit/README.md): the run, its input, logs, events, artifacts and the run's end.

It talks to the node over the run's own channel (descriptor SWARM_KIT_FD, JSON lines of the node's protocol,
docs/api.md "The kit's channel"), never over stdout or stderr: what an agent prints is its log and nothing else.
Without a channel (a node older than the kit), events are dropped and the result is printed as the one JSON document
of the answer. Python 3.9 or later and its standard library only: a node cannot pip-install, so the packer puts this
module into every bundle.
"""

import json
import os
import re
import socket
import sys

KIT_PROTOCOL = 1

__all__ = [
    "KIT_PROTOCOL",
    "KitError",
    "InputError",
    "start",
    "log",
    "event",
    "progress",
    "artifact",
    "result",
    "partial",
    "fail",
    "call",
    "run_agent",
]


class KitError(Exception):
    """A call the node refused: code names the rule (kit_rate_limited, kit_message_too_large, ...)."""

    def __init__(self, code, message, remedy=""):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.remedy = remedy


class InputError(Exception):
    """A bad input: the run fails, refunded, with this message."""


class _Channel:
    def __init__(self, fd):
        self._socket = socket.socket(fileno=fd)
        self._reader = self._socket.makefile("rb")
        self._next = 1

    def call(self, op, fields=None, protocol=KIT_PROTOCOL):
        call_id = self._next
        self._next += 1
        line = dict(fields or {})
        line.update({"v": protocol, "id": call_id, "op": op})
        self._socket.sendall((json.dumps(line, separators=(",", ":")) + "\n").encode("utf-8"))
        # One call at a time: the next line is this call's answer.
        answer_line = self._reader.readline()
        if not answer_line:
            raise KitError("kit_channel_closed", "the node closed the kit channel")
        answer = json.loads(answer_line)
        error = answer.get("error")
        if error:
            raise KitError(error.get("code", ""), error.get("message", ""), error.get("remedy", ""))
        return answer.get("ok") or {}

    def close(self):
        try:
            self._socket.shutdown(socket.SHUT_WR)
        except OSError:
            pass


_channel = None
_opened = False
_ended = False


def _the_channel():
    global _channel, _opened
    if not _opened:
        _opened = True
        fd = os.environ.get("SWARM_KIT_FD", "")
        if fd.isdigit() and int(fd) > 2:
            _channel = _Channel(int(fd))
    return _channel


def start():
    """The run: run_id, agent_id, user_id, tier, input, attempt, protocol. Read once: stdin holds it."""
    text = sys.stdin.read()
    document = json.loads(text) if text.strip() else {}
    channel = _the_channel()
    hello = channel.call("hello") if channel is not None else None
    document.setdefault("input", {})
    document["attempt"] = hello["run"]["attempt"] if hello else 1
    document["protocol"] = hello["protocol"] if hello else 0
    return document


def log(text):
    """A line of the run's log (stderr)."""
    sys.stderr.write(str(text).rstrip("\n") + "\n")
    sys.stderr.flush()


def event(type, data=None, name=None):
    """One event beside the log: type progress, output, tokens or custom (which takes a name)."""
    channel = _the_channel()
    if channel is None:
        return {"seq": None}
    fields = {"type": type, "data": data}
    if name is not None:
        fields["name"] = name
    return channel.call("event", fields)


def progress(done, total=None, message=None):
    """Progress: done of total (or a fraction when total is left out), with an optional message."""
    data = {"done": done}
    if total is not None:
        data["total"] = total
    if message is not None:
        data["message"] = message
    return event("progress", data)


_ARTIFACT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def artifact(name, content):
    """A file the user gets with the run: written into SWARM_ARTIFACTS_DIR (text or bytes); a plain file name."""
    directory = os.environ.get("SWARM_ARTIFACTS_DIR")
    if directory is None:
        raise RuntimeError("this node keeps no artifacts (SWARM_ARTIFACTS_DIR is not set)")
    if not _ARTIFACT_NAME.fullmatch(name):
        raise ValueError(f"{name!r} is not an artifact name: 1-128 letters, digits and . _ - (no directory)")
    path = os.path.join(directory, name)
    with open(path, "wb") as file:
        file.write(content.encode("utf-8") if isinstance(content, str) else content)
    return path


def _end(op, fields):
    global _ended
    if _ended:
        raise KitError("kit_result_reported", "the run reported its end already")
    channel = _the_channel()
    if channel is None:
        _ended = True
        if op == "fail":
            log(fields["message"])
        else:
            sys.stdout.write(json.dumps(fields["output"]) + "\n")
            sys.stdout.flush()
        return
    channel.call(op, fields)
    _ended = True
    channel.close()


def result(output):
    """The run's output: charged as a succeeded run."""
    _end("result", {"output": output})


def partial(output):
    """What the run got done before it had to stop (a dict): charged as a result, marked partial: true."""
    _end("result", {"output": output, "partial": True})


def fail(message):
    """The run failed by the agent's own word: refunded, as every failed run is, with this message."""
    _end("fail", {"message": str(message)})


def call(op, fields=None, protocol=KIT_PROTOCOL):
    """A call of the channel as it is, for a protocol newer than this kit's helpers."""
    channel = _the_channel()
    if channel is None:
        raise KitError("kit_protocol_unsupported", "this node gives the run no kit channel")
    return channel.call(op, fields, protocol)


def run_agent(work):
    """The whole run: work(input, run) returns the output; an InputError or another error fails the run (exit 2, 1)."""
    try:
        run = start()
        output = work(run["input"], run)
        # A work that reported its end itself (partial, fail) returns nothing more to report.
        if not _ended:
            result(output)
    except Exception as error:  # noqa: BLE001 - every failure of the agent's is the run's
        if _ended:
            raise
        fail(f"input: {error}" if isinstance(error, InputError) else str(error) or type(error).__name__)
        sys.exit(2 if isinstance(error, InputError) else 1)
