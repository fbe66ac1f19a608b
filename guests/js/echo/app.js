// @ts-check
// echo, in JavaScript: the smallest useful teammate. It answers every plain
// message with the same text, to its sender, and approves shutdown. It
// behaves like the Rust guests/echo.
//
// | turn kind          | what echo does                                            |
// |--------------------|-----------------------------------------------------------|
// | initial, message   | sends each plain message back to its sender; skips protocol messages |
// | shutdown-request   | approves                                                  |
// | task-claimed       | does no work: reports the task failed so the lead reassigns it |
// | message `crash: …` | throws an Error with that text past the wrapper below: on StarlingMonkey the teammate crashes (QuickJS turns it into a failed turn) |
//
// It runs on both JS engines scripts/build-polyglot builds it with
// (echo-js.wasm: StarlingMonkey, echo-qjs.wasm: QuickJS).
//
// Build: scripts/build-polyglot. Each WIT interface is an ES module named
// after it ('teamhost:agent/messaging@0.1.0'); the types your editor checks
// against are generated from wit/ (see docs/guides/teammate-js.md).

import { send, respondShutdown } from "teamhost:agent/messaging@0.1.0";
import { getStderr } from "wasi:cli/stderr@0.2.12";

/** @typedef {import("teamhost:agent/handler@0.1.0").Turn} Turn */
/** @typedef {import("teamhost:agent/handler@0.1.0").TurnOutcome} TurnOutcome */

/**
 * The export: the host calls handleTurn once per turn. Returning ends the
 * turn; throwing fails it (the teammate keeps running).
 * @type {typeof import("teamhost:agent/handler@0.1.0")}
 */
export const handler = { handleTurn: crashesOnRequest(failsAsText(handleTurn)) };

/**
 * One turn: what woke the teammate is in `turn.kind`.
 * @param {Turn} turn
 * @returns {TurnOutcome}
 */
function handleTurn(turn) {
  switch (turn.kind.tag) {
    case "initial":
    case "message":
      if (turn.messages.length === 0) {
        // A turn with only a prompt (a spawn without an inbox message).
        reply(turn.from, turn.prompt, undefined);
      }
      for (const message of turn.messages) {
        // Protocol messages (task assignments, idle notifications, ...)
        // are for the host and the lead: never echo them.
        if (message.protocol == null) { // none: undefined (StarlingMonkey) or null (QuickJS)
          reply(message.from, message.text, message.summary);
        }
      }
      return {};
    case "shutdown-request": {
      const request = turn.kind.val;
      log(`${request.from} asked me to shut down; approving`);
      try {
        respondShutdown(request.requestId, { tag: "approve" });
      } catch (e) {
        throw `cannot approve shutdown: ${describe(e)}`;
      }
      return {};
    }
    case "task-claimed":
      return {
        task: {
          taskId: turn.kind.val.id,
          status: "failed",
          reason: "echo only answers messages; it does no task work",
        },
      };
  }
}

/**
 * Send `text` back to `to`. A sender that is not a member (`user`, a person
 * at the host) is logged and skipped; any other failure fails the turn.
 * @param {string} to
 * @param {string} text
 * @param {string | undefined} summary
 */
function reply(to, text, summary) {
  try {
    const delivery = send(to, text, summary ? `echo: ${summary}` : "echo");
    log(delivery.message);
  } catch (e) {
    // A WIT `result` error is thrown; its `payload` is the `error` variant,
    // `{ tag: "not-found", val: "why" }`.
    const error = /** @type {{ payload: import("teamhost:agent/types@0.1.0").Error }} */ (e).payload;
    if (error?.tag === "not-found" || error?.tag === "invalid") {
      log(`cannot answer ${to}: ${error.val}`);
    } else {
      throw `cannot answer ${to}: ${describe(e)}`;
    }
  }
}

/** @param {unknown} e a thrown WIT error (or anything else) */
function describe(e) {
  const error = /** @type {any} */ (e)?.payload;
  return error ? `${error.tag}: ${error.val}` : String(e);
}

/**
 * One line to the guest log ({home}/logs/{team}/{name}.log). StarlingMonkey
 * has `console`; QuickJS has neither console nor TextEncoder, so write UTF-8
 * to wasi:cli/stderr by hand.
 * @param {string} line
 */
function log(line) {
  line = `echo: ${line}`;
  const console = globalThis.console;
  if (console) return console.error(line);
  const utf8 = unescape(encodeURIComponent(line + "\n"));
  getStderr().blockingWriteAndFlush(Uint8Array.from(utf8, (c) => c.charCodeAt(0)));
}

/**
 * Wraps the export so that a message `crash: …` throws an uncaught Error
 * (not text): the crash a test shows the host reporting.
 * @param {(turn: Turn) => TurnOutcome} handle
 * @returns {(turn: Turn) => TurnOutcome}
 */
function crashesOnRequest(handle) {
  return (turn) => {
    const crash = turn.messages.find((m) => m.text.startsWith("crash: "));
    if (crash) throw new Error(crash.text);
    return handle(turn);
  };
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
