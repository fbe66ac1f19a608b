"""A teamhost teammate in Python, made from teamhost's templates/teammate-python.

For every task it gets, it writes out/task-N.md in its directory (the task's
subject and description), marks the task completed and tells the lead.
Replace work_on() with your teammate's real work.

| turn kind          | what it does                                            |
|--------------------|---------------------------------------------------------|
| task-claimed       | the host claimed a task for it while it was idle: does it |
| initial, message   | does a task the lead assigned (task_assignment); ignores other messages |
| shutdown-request   | approves                                                |

Build: ./build (componentize-py; the first build of a session takes ~10 s).
Test:  teamhost run team.toml exits 0 only when every task is completed.
"""

import sys

from componentize_py_types import Err
from wit_world import exports
from wit_world.exports.handler import (
    TaskReport, Turn, TurnKind_ShutdownRequest, TurnKind_TaskClaimed, TurnOutcome,
)
from wit_world.imports import messaging, tasks, team, tools
from wit_world.imports.protocol import (
    CompletedStatus, ProtocolMessage_TaskAssignment, ShutdownResponse_Approve,
)
from wit_world.imports.tasks import Task, TaskStatus, TaskUpdate


class Handler(exports.Handler):
    """The host calls handle_turn once per turn. Return to end the turn;
    raise Err("reason") to fail it (the teammate keeps running)."""

    def handle_turn(self, turn: Turn) -> TurnOutcome:
        match turn.kind:
            case TurnKind_ShutdownRequest(request):
                try:
                    messaging.respond_shutdown(request.request_id, ShutdownResponse_Approve())
                except Err as e:
                    raise Err(f"cannot approve the shutdown: {e.value}")
                return TurnOutcome(task=None)
            case TurnKind_TaskClaimed(task):
                pass
            case _:  # initial or message: a task the lead assigned, if any
                ids = [m.protocol.value.task_id for m in turn.messages
                       if isinstance(m.protocol, ProtocolMessage_TaskAssignment)]
                if not ids:
                    return TurnOutcome(task=None)  # the spawn prompt or a chat message
                try:
                    task = tasks.claim(ids[0], False)  # sets it in progress
                except Err as e:
                    raise Err(f"cannot take task #{ids[0]}: {e.value}")

        try:
            done = work_on(task)
        except Err as e:
            # The task stays in progress, ours; the lead decides what next.
            tell_lead(f"Task #{task.id} failed: {e.value}")
            return TurnOutcome(task=TaskReport(task.id, CompletedStatus.FAILED, str(e.value)))
        changes = TaskUpdate(subject=None, description=None, active_form=None,
                             status=TaskStatus.COMPLETED, owner=None, metadata=f'{{"file":"{done}"}}')
        try:
            tasks.update(task.id, changes)
        except Err as e:
            raise Err(f"cannot complete task #{task.id}: {e.value}")
        tell_lead(f"Task #{task.id} done: wrote {done}")
        return TurnOutcome(task=TaskReport(task.id, CompletedStatus.RESOLVED, None))


def work_on(task: Task) -> str:
    """The work itself: write the task down. Returns the file written.

    tools.write is the host's Write tool: the sandbox checks it against the
    teammate's permission mode and tool rules, and may ask the lead first; a
    refusal raises Err(error). (open() works too, through WASI, but only
    where the mode makes the directory writable, and it never asks.)"""
    path = f"out/task-{task.id}.md"
    try:
        tools.write(path, f"# {task.subject}\n\n{task.description.strip()}\n")
    except Err as e:  # e.value is the `error` variant: Error_Denied("why"), ...
        raise Err(f"cannot write {path}: {e.value}")
    print(f"wrote {path}", file=sys.stderr)  # stderr goes to the guest log
    return path


def tell_lead(text: str) -> None:
    """Send the team's lead a message."""
    lead = team.lead()
    try:
        messaging.send(lead, text, text)
    except Err as e:
        raise Err(f"cannot message {lead}: {e.value}")
