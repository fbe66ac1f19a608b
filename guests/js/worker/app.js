// @ts-check
// worker, in JavaScript: counts the words of the files a task names, writes
// a report, completes the task and tells the lead. It behaves like the Rust
// guests/worker, so the two can share a team (examples/polyglot).
//
// A task names its files as Markdown bullets (`- path`), relative to the
// worker's directory; other lines are prose. For task #3 it writes
// reports/task-3.md (a table of files and counts), sets the task completed
// with metadata {"report": "reports/task-3.md", "words": N} and sends the lead
// "Task #3 done: N words in 2 file(s); report in ...". Files are read and
// written through the host's tools, so the sandbox decides every call. A task
// that names no file, a file it cannot read or a report it may not write
// fails: the lead is told why and the turn reports the task failed.
//
// | turn kind          | what the worker does                                      |
// |--------------------|-----------------------------------------------------------|
// | task-claimed       | does that task (the host claimed it while the worker was idle) |
// | initial, message   | claims and does the tasks the lead assigned (task_assignment) |
// | shutdown-request   | approves                                                  |
//
// It runs on both JS engines (scripts/build-polyglot builds worker-js.wasm
// with StarlingMonkey and worker-qjs.wasm with QuickJS): it tests options with
// `== null` (QuickJS gives null, StarlingMonkey undefined) and logs with log().

import { respondShutdown, send } from "teamhost:agent/messaging@0.1.0";
import { claim, update } from "teamhost:agent/tasks@0.1.0";
import { lead } from "teamhost:agent/team@0.1.0";
import { read, write } from "teamhost:agent/tools@0.1.0";
import { getStderr } from "wasi:cli/stderr@0.2.12";

/** @typedef {import("teamhost:agent/handler@0.1.0").Turn} Turn */
/** @typedef {import("teamhost:agent/handler@0.1.0").TurnOutcome} TurnOutcome */
/** @typedef {import("teamhost:agent/tasks@0.1.0").Task} Task */
/** @typedef {import("teamhost:agent/handler@0.1.0").TaskReport} TaskReport */

const REPORT_DIR = "reports";

/** @type {typeof import("teamhost:agent/handler@0.1.0")} */
export const handler = { handleTurn: failsAsText(handleTurn) };

/**
 * One turn: what woke the teammate is in `turn.kind`.
 * @param {Turn} turn
 * @returns {TurnOutcome}
 */
function handleTurn(turn) {
  /** @type {Task[]} */
  let assigned = [];
  switch (turn.kind.tag) {
    case "shutdown-request": {
      const request = turn.kind.val;
      log(`${request.from} asked me to shut down; approving`);
      call(() => respondShutdown(request.requestId, { tag: "approve" }), "cannot approve shutdown");
      return {};
    }
    case "task-claimed":
      assigned = [turn.kind.val];
      break;
    default: // initial or message: take the tasks the lead assigned
      for (const message of turn.messages) {
        const task = takeAssigned(message.protocol);
        if (task) assigned.push(task);
      }
  }
  // One task after another; stop at the first that fails. When the worker
  // goes idle, the host claims the next open task for it.
  const lead = leadName();
  /** @type {TaskReport | undefined} */
  let last;
  for (const task of assigned) {
    last = doTask(task, lead);
    if (last.status !== "resolved") break;
  }
  return { task: last };
}

/**
 * Claim the task a task_assignment names (claiming our own task marks it in
 * progress). Undefined for any other message, or a task taken meanwhile.
 * @param {import("teamhost:agent/protocol@0.1.0").ProtocolMessage | undefined} protocol
 * @returns {Task | undefined}
 */
function takeAssigned(protocol) {
  if (protocol == null || protocol.tag !== "task-assignment") return undefined;
  const id = protocol.val.taskId;
  try {
    return claim(id, false);
  } catch (e) {
    const why = errorOf(e); // a claim-error: already-claimed, blocked, ..., other
    if (why.tag === "other") throw `cannot take task #${id}: ${describe(why.val)}`;
    log(`skipping task #${id}: ${why.tag}`);
    return undefined;
  }
}

/**
 * Count, report, complete the task and tell the lead. A failure of the work
 * is reported to the lead; only a failing host call fails the turn.
 * @param {Task} task
 * @param {string} lead
 * @returns {TaskReport}
 */
function doTask(task, lead) {
  log(`working on task #${task.id}: ${task.subject}`);
  let done;
  try {
    done = countAndReport(task);
  } catch (why) {
    if (!(why instanceof WorkFailed)) throw why;
    tell(lead, `Task #${task.id} failed: ${why.message}`, `Task #${task.id} failed`);
    return { taskId: task.id, status: "failed", reason: why.message };
  }
  const { path, files, total } = done;
  const metadata = JSON.stringify({ report: path, words: total });
  call(() => update(task.id, { status: "completed", metadata }), `cannot complete task #${task.id}`);
  tell(lead, `Task #${task.id} done: ${total} words in ${files} file(s); report in ${path}`,
    `Task #${task.id} done: ${total} words`);
  return { taskId: task.id, status: "resolved" };
}

/** The task cannot be done (no files named, a file unreadable, ...). */
class WorkFailed extends Error {}

/**
 * Count the words of each file the task names and write the report.
 * @param {Task} task
 */
function countAndReport(task) {
  const files = task.description.split("\n")
    .map((line) => line.trim())
    .filter((line) => line.startsWith("- ") || line.startsWith("* "))
    .map((line) => line.slice(2).trim())
    .filter((path) => path !== "");
  if (files.length === 0) {
    throw new WorkFailed("the description names no files (list them as `- path` lines)");
  }
  const counts = files.map((file) => [file, countWords(file)]);
  const total = counts.reduce((sum, [, n]) => sum + Number(n), 0);

  const path = `${REPORT_DIR}/task-${task.id}.md`;
  let report = `# Task #${task.id}: ${task.subject}\n\n| file | words |\n|---|---:|\n`;
  for (const [file, n] of counts) report += `| ${file} | ${n} |\n`;
  report += `| **total** | **${total}** |\n`;
  try {
    write(path, report); // creates reports/ too
  } catch (e) {
    throw new WorkFailed(`cannot write ${path}: ${describe(errorOf(e))}`);
  }
  return { path, files: counts.length, total };
}

/**
 * Words in a file, read page by page with the host's Read tool: each line
 * comes back numbered as `cat -n` does ("     1<TAB>text").
 * @param {string} path
 */
function countWords(path) {
  let words = 0;
  /** @type {bigint | undefined} */
  let offset = undefined;
  for (;;) {
    let page;
    try {
      page = read(path, offset, undefined);
    } catch (e) {
      throw new WorkFailed(`cannot read ${path}: ${describe(errorOf(e))}`);
    }
    for (const line of page.content.split("\n")) {
      const text = line.slice(line.indexOf("\t") + 1);
      words += text.split(/\s+/).filter((w) => w !== "").length;
    }
    // A u64 is a bigint on StarlingMonkey and a number on QuickJS: pass it
    // back as it came.
    if (page.nextOffset == null) return words;
    offset = page.nextOffset;
  }
}

/** The lead's name (the host knows it: no roster read). */
function leadName() {
  return lead();
}

/** @param {string} to @param {string} text @param {string} summary */
function tell(to, text, summary) {
  call(() => send(to, text, summary), `cannot message ${to}`);
}

/**
 * Run a host call; its WIT error fails the turn with `what: why` (a thrown
 * string becomes handle-turn's `err`).
 * @template T
 * @param {() => T} fn
 * @param {string} what
 * @returns {T}
 */
function call(fn, what) {
  try {
    return fn();
  } catch (e) {
    throw `${what}: ${describe(errorOf(e))}`;
  }
}

/**
 * A host call that returns `err(x)` throws an Error whose `payload` is x.
 * @param {unknown} e
 * @returns {any}
 */
function errorOf(e) {
  if (e && typeof e === "object" && "payload" in e) return e.payload;
  throw e; // not a WIT error: a bug, let it fail the turn
}

/** `denied: why` for a WIT `error` variant `{ tag: "denied", val: "why" }`. */
function describe(/** @type {{ tag: string, val?: unknown }} */ error) {
  return `${error.tag}: ${error.val}`;
}

/**
 * One line to the guest log ({home}/logs/{team}/{name}.log). StarlingMonkey
 * has `console`; QuickJS has neither console nor TextEncoder, so write UTF-8
 * to wasi:cli/stderr by hand.
 * @param {string} line
 */
function log(line) {
  line = `worker: ${line}`;
  const console = globalThis.console;
  if (console) return console.error(line);
  const utf8 = unescape(encodeURIComponent(line + "\n"));
  getStderr().blockingWriteAndFlush(Uint8Array.from(utf8, (c) => c.charCodeAt(0)));
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
