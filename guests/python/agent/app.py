"""agent, in Python: a minimal LLM teammate. Each turn it hands the model
what arrived, runs the tools the model calls until it answers without one,
and keeps the whole conversation for the next turn. The model and the tools
are the host's (`model`, `toolbox`): the host holds the keys, keeps the
budget and runs every tool call through the sandbox.

It is guests/agent (Rust) made small: no plan mode, no trimming of the
conversation to the context window. The loop:

    messages += user: what arrived
    loop:
        answer = model.complete(system, messages, toolbox.definitions())
        messages += assistant: answer.content
        if answer has no tool-use block: done
        messages += user: [toolbox.invoke(call) for each tool-use block]

| turn kind          | what the agent does                                       |
|--------------------|-----------------------------------------------------------|
| initial, message   | plain messages become <teammate-message> blocks for the model (framing.py: no text can end its block or forge an attribute); a task the lead assigns is claimed and given to the model |
| task-claimed       | gives the model the task; reports it resolved if the model completed it |
| shutdown-request   | approves, without asking the model                        |
"""

import sys

from componentize_py_types import Err
from wit_world import exports
from wit_world.exports.handler import (
    TaskReport, Turn, TurnKind_ShutdownRequest, TurnKind_TaskClaimed, TurnOutcome,
)
from wit_world.imports import messaging, model, tasks, team, toolbox
from wit_world.imports.model import (
    ContentBlock, ContentBlock_Text, ContentBlock_ToolResult, ContentBlock_ToolUse, Message,
    Request, Role,
)
from wit_world.imports.protocol import (
    CompletedStatus, ProtocolMessage_TaskAssignment, ShutdownResponse_Approve,
)
from wit_world.imports.tasks import TaskStatus

from framing import shown, teammate_block

MAX_CALLS_PER_TURN = 20  # model calls in one turn before the agent gives up


class Agent:
    """The agent's memory. The host keeps one instance of the component per
    teammate alive between turns, so this object lives across turns."""

    def __init__(self) -> None:
        me = team.whoami()
        lead = team.lead()
        self.name = me.name
        self.system = (
            f'You are {me.name}, a teammate in the team "{me.team_name}". Your lead is {lead}. '
            "You work in a sandbox on the files of your working directory; there is no network. "
            "Do your work with your tools and keep the task list current (TaskUpdate). "
            f"Nobody reads your plain answers: report to {lead} with SendMessage, then stop."
        )
        self.conversation: list[Message] = []

    def say(self, text: str) -> None:
        """Add a user text, to the last message if it is the user's already
        (after a failed turn), since roles must alternate."""
        if self.conversation and self.conversation[-1].role == Role.USER:
            self.conversation[-1].content.append(ContentBlock_Text(text))
        else:
            self.conversation.append(Message(Role.USER, [ContentBlock_Text(text)]))

    def think(self) -> None:
        """The agent loop: model, tools, model, ... until the model answers
        without calling a tool. A model error fails the turn."""
        tools = toolbox.definitions()
        for _ in range(MAX_CALLS_PER_TURN):
            request = Request(model="", system=self.system, messages=self.conversation,
                              tools=tools, tool_choice=None, max_tokens=None,
                              temperature=None, stop_sequences=[])
            try:
                answer = model.complete(request)
            except Err as e:
                raise Err(f"the model call failed: {e.value}")
            self.conversation.append(Message(Role.ASSISTANT, answer.content))
            calls = [b.value for b in answer.content if isinstance(b, ContentBlock_ToolUse)]
            if not calls:
                return
            # invoke never raises: a refusal or a bad input is an error result
            # the model reads and can act on.
            results: list[ContentBlock] = [ContentBlock_ToolResult(toolbox.invoke(call)) for call in calls]
            self.conversation.append(Message(Role.USER, results))
        raise Err(f"stopped after {MAX_CALLS_PER_TURN} model calls without finishing")

    def handle(self, turn: Turn) -> TurnOutcome:
        match turn.kind:
            case TurnKind_ShutdownRequest(request):
                try:
                    messaging.respond_shutdown(request.request_id, ShutdownResponse_Approve())
                except Err as e:
                    raise Err(f"cannot approve the shutdown: {e.value}")
                return TurnOutcome(task=None)
            case TurnKind_TaskClaimed(task):
                self.say(task_text(task.id, turn.prompt))
                return TurnOutcome(task=self.work_on(task.id))

        # initial or message
        claimed, wake = None, False
        for m in turn.messages:
            match m.protocol:
                case None:  # plain text, as Claude Code shows it to its model (framing.py's rule)
                    self.say(teammate_block(m.from_, m.summary, m.text))
                    wake = True
                case ProtocolMessage_TaskAssignment(a) if a.assigned_by != self.name:
                    try:
                        task = tasks.claim(a.task_id, False)
                    except Err as e:
                        log(f"not taking task #{a.task_id}: {e.value}")
                        continue
                    self.say(task_text(task.id, f"{task.subject}\n\n{task.description}"))
                    claimed, wake = task.id, True
                case _:  # idle notifications, our own assignments, ...: nothing to think about
                    pass
        if not turn.messages and turn.prompt:
            self.say(turn.prompt)
            wake = True
        if not wake:
            return TurnOutcome(task=None)
        if claimed is not None:
            return TurnOutcome(task=self.work_on(claimed))
        self.think()
        return TurnOutcome(task=None)

    def work_on(self, task_id: str) -> TaskReport | None:
        """Think about a task; resolved when the model completed it, failed
        when the loop failed, nothing when the task is still open."""
        try:
            self.think()
        except Err as e:
            return TaskReport(task_id, CompletedStatus.FAILED, str(e.value))
        try:
            done = tasks.get(task_id).status == TaskStatus.COMPLETED
        except Err:
            done = False  # deleted meanwhile: nothing to report
        return TaskReport(task_id, CompletedStatus.RESOLVED, None) if done else None


def task_text(task_id: str, body: str) -> str:
    """A task for the model; its subject and description (any teammate may
    have written them) framed by framing.shown."""
    return (f"You have task #{task_id}. Mark it in_progress, do it, mark it completed, "
            f"and report to the lead.\n\n{shown(body)}")


def log(line: str) -> None:
    print(f"agent: {line}", file=sys.stderr)


AGENT: Agent | None = None  # made in the first turn: whoami needs the host


class Handler(exports.Handler):
    def handle_turn(self, turn: Turn) -> TurnOutcome:
        global AGENT
        if AGENT is None:
            AGENT = Agent()
        return AGENT.handle(turn)
