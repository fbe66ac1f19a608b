"""worker, in Python: counts the words of the files a task names, writes a
report, completes the task and tells the lead. It behaves like the Rust
guests/worker, so the two can share a team (examples/polyglot).

A task names its files as Markdown bullets, relative to the worker's
directory; other lines are prose:

    Count the words of the chapters.
    - chapters/one.txt
    - chapters/two.txt

For task #3 it writes reports/task-3.md (a table of files and counts), sets
the task completed with metadata {"report": "reports/task-3.md", "words": N}
and sends the lead "Task #3 done: N words in 2 file(s); report in ...".
Files are read and written through the host's tools (tools.read,
tools.write), so the sandbox decides every call. A task that names no file,
a file it cannot read or a report it may not write fails: the lead is told
why and the turn reports the task failed.

| turn kind          | what the worker does                                      |
|--------------------|-----------------------------------------------------------|
| task-claimed       | does that task (the host claimed it while the worker was idle) |
| initial, message   | claims and does the tasks the lead assigned (task_assignment) |
| shutdown-request   | approves                                                  |
"""

import json
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
from wit_world.imports.tasks import ClaimError_Other, Task, TaskStatus, TaskUpdate

REPORT_DIR = "reports"


class Handler(exports.Handler):
    def handle_turn(self, turn: Turn) -> TurnOutcome:
        match turn.kind:
            case TurnKind_ShutdownRequest(request):
                log(f"{request.from_} asked me to shut down; approving")
                call(lambda: messaging.respond_shutdown(request.request_id, ShutdownResponse_Approve()),
                     "cannot approve shutdown")
                return TurnOutcome(task=None)
            case TurnKind_TaskClaimed(task):
                assigned = [task]
            case _:  # initial or message: take the tasks the lead assigned
                assigned = [t for m in turn.messages if (t := take_assigned(m.protocol))]

        # One task after another; stop at the first that fails. When the
        # worker goes idle, the host claims the next open task for it.
        lead = lead_name()
        last = None
        for task in assigned:
            last = do_task(task, lead)
            if last.status != CompletedStatus.RESOLVED:
                break
        return TurnOutcome(task=last)


def take_assigned(protocol) -> Task | None:
    """Claim the task a task_assignment names (a claim of our own task marks
    it in progress). None for any other message, or a task taken meanwhile."""
    if not isinstance(protocol, ProtocolMessage_TaskAssignment):
        return None
    task_id = protocol.value.task_id
    try:
        return tasks.claim(task_id, False)
    except Err as e:
        if isinstance(e.value, ClaimError_Other):
            raise Err(f"cannot take task #{task_id}: {describe(e.value.value)}")
        log(f"skipping task #{task_id}: {e.value}")
        return None


def do_task(task: Task, lead: str) -> TaskReport:
    """Count, report, complete the task and tell the lead. A failure of the
    work is reported to the lead; only a failing host call fails the turn."""
    log(f"working on task #{task.id}: {task.subject}")
    try:
        path, files, total = count_and_report(task)
    except WorkFailed as why:
        tell(lead, f"Task #{task.id} failed: {why}", f"Task #{task.id} failed")
        return TaskReport(task.id, CompletedStatus.FAILED, str(why))

    metadata = json.dumps({"report": path, "words": total})
    done = TaskUpdate(subject=None, description=None, active_form=None,
                      status=TaskStatus.COMPLETED, owner=None, metadata=metadata)
    call(lambda: tasks.update(task.id, done), f"cannot complete task #{task.id}")
    tell(lead, f"Task #{task.id} done: {total} words in {files} file(s); report in {path}",
         f"Task #{task.id} done: {total} words")
    return TaskReport(task.id, CompletedStatus.RESOLVED, None)


class WorkFailed(Exception):
    """The task cannot be done (no files named, a file unreadable, ...)."""


def count_and_report(task: Task) -> tuple[str, int, int]:
    """Count the words of each file the task names and write the report.
    Returns (report path, number of files, total words)."""
    files = [line.strip()[2:].strip() for line in task.description.splitlines()
             if line.strip().startswith(("- ", "* "))]
    files = [f for f in files if f]
    if not files:
        raise WorkFailed("the description names no files (list them as `- path` lines)")
    counts = [(f, count_words(f)) for f in files]
    total = sum(n for _, n in counts)

    path = f"{REPORT_DIR}/task-{task.id}.md"
    report = f"# Task #{task.id}: {task.subject}\n\n| file | words |\n|---|---:|\n"
    report += "".join(f"| {f} | {n} |\n" for f, n in counts)
    report += f"| **total** | **{total}** |\n"
    try:
        tools.write(path, report)  # creates reports/ too
    except Err as e:
        raise WorkFailed(f"cannot write {path}: {describe(e.value)}")
    return path, len(counts), total


def count_words(path: str) -> int:
    """Words in a file, read page by page with the host's Read tool: each
    line comes back numbered as `cat -n` does ("     1<TAB>text")."""
    words, offset = 0, None
    while True:
        try:
            page = tools.read(path, offset, None)
        except Err as e:
            raise WorkFailed(f"cannot read {path}: {describe(e.value)}")
        for line in page.content.splitlines():
            words += len(line.split("\t", 1)[-1].split())
        if page.next_offset is None:
            return words
        offset = page.next_offset


def lead_name() -> str:
    """The lead's name (the host knows it: no roster read)."""
    return team.lead()


def tell(to: str, text: str, summary: str) -> None:
    call(lambda: messaging.send(to, text, summary), f"cannot message {to}")


def call(fn, what: str):
    """Run a host call; its WIT error fails the turn with `what: why`."""
    try:
        return fn()
    except Err as e:
        raise Err(f"{what}: {describe(e.value)}")


def describe(error) -> str:
    """`not-found: why` for a WIT `error` (Error_NotFound("why"), ...)."""
    case = type(error).__name__.removeprefix("Error_")  # NotFound
    case = "".join("-" + c.lower() if c.isupper() else c for c in case).lstrip("-")
    return f"{case}: {getattr(error, 'value', error)}"


def log(line: str) -> None:
    """stderr goes to the guest log: {home}/logs/{team}/{name}.log."""
    print(f"worker: {line}", file=sys.stderr)
