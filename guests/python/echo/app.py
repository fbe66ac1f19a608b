"""echo, in Python: the smallest useful teammate. It answers every plain
message with the same text, to its sender, and approves shutdown. It behaves
like the Rust guests/echo.

| turn kind          | what echo does                                            |
|--------------------|-----------------------------------------------------------|
| initial, message   | sends each plain message back to its sender; skips protocol messages |
| shutdown-request   | approves                                                  |
| task-claimed       | does no work: reports the task failed so the lead reassigns it |
| message `crash: …` | raises an uncaught RuntimeError with that text: the teammate crashes (tests show its traceback reaches the failure reason) |

Build: scripts/build-polyglot (componentize-py generates the `wit_world`
package from teamhost's wit/ while it builds; see docs/guides/teammate-python.md).
"""

import sys

# `wit_world` is generated from wit/ at build time: one module per interface.
from wit_world import exports
from wit_world.exports.handler import (
    TaskReport, Turn, TurnKind_Initial, TurnKind_Message,
    TurnKind_ShutdownRequest, TurnKind_TaskClaimed, TurnOutcome,
)
from wit_world.imports import messaging
from wit_world.imports.protocol import CompletedStatus, ShutdownResponse_Approve
from wit_world.imports.teamhost_agent_types import Error_Invalid, Error_NotFound
from componentize_py_types import Err


class Handler(exports.Handler):
    """The export: the host calls handle_turn once per turn. Returning ends
    the turn; raising Err("reason") fails it (the teammate keeps running)."""

    def handle_turn(self, turn: Turn) -> TurnOutcome:
        match turn.kind:
            case TurnKind_Initial() | TurnKind_Message():
                if not turn.messages:
                    # A turn with only a prompt (a spawn without an inbox message).
                    reply(turn.from_, turn.prompt, None)
                for message in turn.messages:
                    if message.text.startswith("crash: "):
                        crash(message.text)
                    # Protocol messages (task assignments, idle notifications,
                    # ...) are for the host and the lead: never echo them.
                    if message.protocol is None:
                        reply(message.from_, message.text, message.summary)
                return TurnOutcome(task=None)
            case TurnKind_ShutdownRequest(request):
                print(f"echo: {request.from_} asked me to shut down; approving", file=sys.stderr)
                try:
                    messaging.respond_shutdown(request.request_id, ShutdownResponse_Approve())
                except Err as e:
                    raise Err(f"cannot approve shutdown: {e.value}")
                return TurnOutcome(task=None)
            case TurnKind_TaskClaimed(task):
                reason = "echo only answers messages; it does no task work"
                return TurnOutcome(task=TaskReport(task.id, CompletedStatus.FAILED, reason))


def crash(text: str) -> None:
    """Raise what the handler does not catch: not an `Err`, so the turn does
    not fail quietly; the guest traps and its traceback goes to stderr."""
    raise RuntimeError(text)


def reply(to: str, text: str, summary: str | None) -> None:
    """Send `text` back to `to`. A sender that is not a member (`user`, a
    person at the host) is logged and skipped; any other failure fails the turn."""
    summary = f"echo: {summary}" if summary else "echo"
    try:
        delivery = messaging.send(to, text, summary)
        print(f"echo: {delivery.message}", file=sys.stderr)
    except Err as e:
        # A WIT `result` error arrives as the exception Err(value); here the
        # value is the `error` variant, one dataclass per case.
        match e.value:
            case Error_NotFound(why) | Error_Invalid(why):
                print(f"echo: cannot answer {to}: {why}", file=sys.stderr)
            case other:
                raise Err(f"cannot answer {to}: {other}")
