// @ts-check
// A teamhost teammate in JavaScript, made from teamhost's templates/teammate-js.
//
// For every task it gets, it writes out/task-N.md in its directory (the
// task's subject and description), marks the task completed and tells the
// lead. Replace workOn() with your teammate's real work.
//
// | turn kind          | what it does                                            |
// |--------------------|---------------------------------------------------------|
// | task-claimed       | the host claimed a task for it while it was idle: does it |
// | initial, message   | does a task the lead assigned (task_assignment); ignores other messages |
// | shutdown-request   | approves                                                |
//
// Build: ./build (StarlingMonkey) or ./build --qjs (QuickJS: smaller, no console).
// Test:  teamhost run team.toml exits 0 only when every task is completed.

import { respondShutdown, send } from "teamhost:agent/messaging@0.1.0";
import { claim, update } from "teamhost:agent/tasks@0.1.0";
import { lead as leadOf } from "teamhost:agent/team@0.1.0";
import { write } from "teamhost:agent/tools@0.1.0";

/** @typedef {import("teamhost:agent/handler@0.1.0").Turn} Turn */
/** @typedef {import("teamhost:agent/handler@0.1.0").TurnOutcome} TurnOutcome */
/** @typedef {import("teamhost:agent/tasks@0.1.0").Task} Task */

/**
 * The host calls handleTurn once per turn. Return to end the turn; throw to
 * fail it (the teammate keeps running; the lead sees the text).
 * @type {typeof import("teamhost:agent/handler@0.1.0")}
 */
export const handler = { handleTurn: failsAsText(handleTurn) };

/**
 * One turn: what woke the teammate is in `turn.kind`.
 * @param {Turn} turn
 * @returns {TurnOutcome}
 */
function handleTurn(turn) {
  /** @type {Task} */
  let task;
  switch (turn.kind.tag) {
    case "shutdown-request":
      try {
        respondShutdown(turn.kind.val.requestId, { tag: "approve" });
      } catch (e) {
        throw `cannot approve the shutdown: ${why(e)}`;
      }
      return {};
    case "task-claimed":
      task = turn.kind.val;
      break;
    default: {
      // initial or message: a task the lead assigned, if any
      const assignment = turn.messages.map((m) => m.protocol).find((p) => p?.tag === "task-assignment");
      if (assignment?.tag !== "task-assignment") return {}; // the spawn prompt or a chat message
      try {
        task = claim(assignment.val.taskId, false); // sets it in progress
      } catch (e) {
        throw `cannot take task #${assignment.val.taskId}: ${why(e)}`;
      }
    }
  }

  let done;
  try {
    done = workOn(task);
  } catch (e) {
    // The task stays in progress, ours; the lead decides what next.
    tellLead(`Task #${task.id} failed: ${e}`);
    return { task: { taskId: task.id, status: "failed", reason: String(e) } };
  }
  try {
    update(task.id, { status: "completed", metadata: JSON.stringify({ file: done }) });
  } catch (e) {
    throw `cannot complete task #${task.id}: ${why(e)}`;
  }
  tellLead(`Task #${task.id} done: wrote ${done}`);
  return { task: { taskId: task.id, status: "resolved" } };
}

/**
 * The work itself: write the task down. Returns the file written.
 *
 * `write` is the host's Write tool: the sandbox checks it against the
 * teammate's permission mode and tool rules, and may ask the lead first; a
 * refusal throws an Error whose `payload` is the WIT `error` variant.
 * @param {Task} task
 */
function workOn(task) {
  const path = `out/task-${task.id}.md`;
  try {
    write(path, `# ${task.subject}\n\n${task.description.trim()}\n`);
  } catch (e) {
    throw `cannot write ${path}: ${why(e)}`;
  }
  return path;
}

/**
 * Send the team's lead a message.
 * @param {string} text
 */
function tellLead(text) {
  const lead = leadOf();
  try {
    send(lead, text, text);
  } catch (e) {
    throw `cannot message ${lead}: ${why(e)}`;
  }
}

/**
 * A host call that returns `err(x)` throws an Error whose `payload` is x:
 * for most calls the `error` variant, `{ tag: "denied", val: "why" }`.
 * @param {unknown} e
 */
function why(e) {
  const p = /** @type {any} */ (e)?.payload;
  return p ? `${p.tag}: ${typeof p.val === "string" ? p.val : JSON.stringify(p.val)}` : String(e);
}

/**
 * Wraps the export so that whatever it throws reaches the host as the turn's
 * `err(string)`: StarlingMonkey traps (and stops the teammate) when the
 * thrown value is not a string, QuickJS turns it into text itself.
 * @param {(turn: Turn) => TurnOutcome} handle
 * @returns {(turn: Turn) => TurnOutcome}
 */
function failsAsText(handle) {
  return (turn) => {
    try {
      return handle(turn);
    } catch (e) {
      throw e instanceof Error ? `${e.name}: ${e.message}` : String(e);
    }
  };
}
