// @ts-check
// agent, in JavaScript: a minimal LLM teammate. Each turn it hands the model
// what arrived, runs the tools the model calls until it answers without one,
// and keeps the whole conversation for the next turn. The model and the
// tools are the host's (`model`, `toolbox`): the host holds the keys, keeps
// the budget and runs every tool call through the sandbox.
//
// It is guests/agent (Rust) made small: no plan mode, no trimming of the
// conversation to the context window. The loop:
//
//     messages += user: what arrived
//     loop:
//         answer = model.complete(system, messages, toolbox.definitions())
//         messages += assistant: answer.content
//         if answer has no tool-use block: done
//         messages += user: [toolbox.invoke(call) for each tool-use block]
//
// | turn kind          | what the agent does                                       |
// |--------------------|-----------------------------------------------------------|
// | initial, message   | plain messages become <teammate-message> blocks for the model (the framing rule: no text can end its block or forge an attribute); a task the lead assigns is claimed and given to the model |
// | task-claimed       | gives the model the task; reports it resolved if the model completed it |
// | shutdown-request   | approves, without asking the model                        |
//
// It runs on both JS engines (StarlingMonkey and QuickJS): options are tested
// with `== null`, and log() falls back to wasi:cli/stderr without `console`.

import { respondShutdown } from "teamhost:agent/messaging@0.1.0";
import { complete } from "teamhost:agent/model@0.1.0";
import { claim, get } from "teamhost:agent/tasks@0.1.0";
import { lead as leadOf, whoami } from "teamhost:agent/team@0.1.0";
import { definitions, invoke } from "teamhost:agent/toolbox@0.1.0";
import { getStderr } from "wasi:cli/stderr@0.2.12";

/** @typedef {import("teamhost:agent/handler@0.1.0").Turn} Turn */
/** @typedef {import("teamhost:agent/handler@0.1.0").TurnOutcome} TurnOutcome */
/** @typedef {import("teamhost:agent/model@0.1.0").Message} Message */
/** @typedef {import("teamhost:agent/handler@0.1.0").TaskReport} TaskReport */

const MAX_CALLS_PER_TURN = 20; // model calls in one turn before the agent gives up

/**
 * The agent's memory. The host keeps one instance of the component per
 * teammate alive between turns, so this object lives across turns.
 */
class Agent {
  constructor() {
    const me = whoami();
    const lead = leadOf();
    this.name = me.name;
    this.system =
      `You are ${me.name}, a teammate in the team "${me.teamName}". Your lead is ${lead}. ` +
      "You work in a sandbox on the files of your working directory; there is no network. " +
      "Do your work with your tools and keep the task list current (TaskUpdate). " +
      `Nobody reads your plain answers: report to ${lead} with SendMessage, then stop.`;
    /** @type {Message[]} */
    this.conversation = [];
  }

  /**
   * Add a user text, to the last message if it is the user's already (after
   * a failed turn), since roles must alternate.
   * @param {string} text
   */
  say(text) {
    const last = this.conversation[this.conversation.length - 1];
    if (last?.role === "user") last.content.push({ tag: "text", val: text });
    else this.conversation.push({ role: "user", content: [{ tag: "text", val: text }] });
  }

  /**
   * The agent loop: model, tools, model, ... until the model answers without
   * calling a tool. A model error fails the turn (a thrown string).
   */
  think() {
    const tools = definitions();
    for (let i = 0; i < MAX_CALLS_PER_TURN; i++) {
      let answer;
      try {
        answer = complete({ model: "", system: this.system, messages: this.conversation, tools, stopSequences: [] });
      } catch (e) {
        const why = /** @type {any} */ (e)?.payload; // a model-error: { tag: "denied", val: "…" }, …
        throw `the model call failed: ${why ? `${why.tag}: ${JSON.stringify(why.val)}` : e}`;
      }
      this.conversation.push({ role: "assistant", content: answer.content });
      const calls = answer.content.flatMap((b) => (b.tag === "tool-use" ? [b.val] : []));
      if (calls.length === 0) return;
      // invoke never throws: a refusal or a bad input is an error result the
      // model reads and can act on.
      this.conversation.push({
        role: "user",
        content: calls.map((call) => ({ tag: "tool-result", val: invoke(call) })),
      });
    }
    throw `stopped after ${MAX_CALLS_PER_TURN} model calls without finishing`;
  }

  /** @param {import("teamhost:agent/handler@0.1.0").Turn} turn */
  handle(turn) {
    switch (turn.kind.tag) {
      case "shutdown-request":
        try {
          respondShutdown(turn.kind.val.requestId, { tag: "approve" });
        } catch (e) {
          throw `cannot approve the shutdown: ${JSON.stringify(/** @type {any} */ (e)?.payload)}`;
        }
        return {};
      case "task-claimed":
        this.say(taskText(turn.kind.val.id, turn.prompt));
        return { task: this.workOn(turn.kind.val.id) };
    }
    // initial or message
    let claimed;
    let wake = false;
    for (const m of turn.messages) {
      const p = m.protocol;
      if (p == null) {
        // plain text, as Claude Code shows it to its model (the framing rule below)
        this.say(teammateBlock(m.from, m.summary, m.text));
        wake = true;
      } else if (p.tag === "task-assignment" && p.val.assignedBy !== this.name) {
        let task;
        try {
          task = claim(p.val.taskId, false);
        } catch (e) {
          log(`not taking task #${p.val.taskId}: ${JSON.stringify(/** @type {any} */ (e)?.payload)}`);
          continue;
        }
        this.say(taskText(task.id, `${task.subject}\n\n${task.description}`));
        claimed = task.id;
        wake = true;
      } // idle notifications, our own assignments, ...: nothing to think about
    }
    if (turn.messages.length === 0 && turn.prompt) {
      this.say(turn.prompt);
      wake = true;
    }
    if (!wake) return {};
    if (claimed !== undefined) return { task: this.workOn(claimed) };
    this.think();
    return {};
  }

  /**
   * Think about a task: resolved when the model completed it, failed when the
   * loop failed, nothing when the task is still open.
   * @param {string} id
   * @returns {TaskReport | undefined}
   */
  workOn(id) {
    try {
      this.think();
    } catch (e) {
      return { taskId: id, status: "failed", reason: String(e) };
    }
    let done = false;
    try {
      done = get(id).status === "completed";
    } catch {
      // deleted meanwhile: nothing to report
    }
    return done ? { taskId: id, status: "resolved" } : undefined;
  }
}

/**
 * A task for the model; its subject and description (any teammate may have
 * written them) framed by `shown`.
 * @param {string} id @param {string} body
 */
function taskText(id, body) {
  return `You have task #${id}. Mark it in_progress, do it, mark it completed, and report to the lead.\n\n${shown(body)}`;
}

// The framing rule every teamhost agent applies (guests/agent/src/framing.rs
// states it, with the reasons), so that a message can neither end its own
// block nor pose as another sender:
//
// | text                                      | what changes                                   |
// |-------------------------------------------|------------------------------------------------|
// | an attribute value (teammate_id, summary) | & -> &amp;; " and look-alikes (QUOTES) -> &quot;; < and look-alikes (OPENERS) -> &lt;; > -> &gt;; a line break -> a space |
// | a body, a task's subject and description  | < and look-alikes (OPENERS) -> &lt;            |
//
// Nothing else changes. app.test.mjs checks the cases all three agents share
// (guests/agent/framing-cases.json) through handleTurn. Kept in this file:
// each JS guest is one file for componentize.

/** `<` and the characters a model may read as `<`: in text a teammate wrote, each is shown as `&lt;`. */
const OPENERS = "<\uff1c\ufe64\u02c2\u1438\u2039\u2329\u27e8\u3008\u276e";
/** `"` and the characters a model may read as `"`: in an attribute value, each is shown as `&quot;`. */
const QUOTES = '"\uff02\u201c\u201d';

/**
 * One message as the model sees it: `<teammate-message teammate_id="FROM"
 * summary="SUMMARY">`, the text on its own lines, `</teammate-message>`; the
 * summary only when given and not empty.
 * @param {string} from @param {string | undefined} summary @param {string} text
 */
function teammateBlock(from, summary, text) {
  const attrs = summary ? ` summary="${attribute(summary)}"` : "";
  return `<teammate-message teammate_id="${attribute(from)}"${attrs}>\n${shown(text)}\n</teammate-message>`;
}

/**
 * `value` made safe between double quotes.
 * @param {string} value
 */
function attribute(value) {
  let out = "";
  for (const c of value) {
    if (c === "&") out += "&amp;";
    else if (c === ">") out += "&gt;";
    else if (c === "\n" || c === "\r") out += " ";
    else if (QUOTES.includes(c)) out += "&quot;";
    else if (OPENERS.includes(c)) out += "&lt;";
    else out += c;
  }
  return out;
}

/**
 * `text` with every `<` and look-alike shown as `&lt;`: it opens or closes no tag.
 * @param {string} text
 */
function shown(text) {
  let out = "";
  for (const c of text) out += OPENERS.includes(c) ? "&lt;" : c;
  return out;
}

/**
 * One line to the guest log. StarlingMonkey has `console`; QuickJS has
 * neither console nor TextEncoder, so write UTF-8 to wasi:cli/stderr.
 * @param {string} line
 */
function log(line) {
  line = `agent: ${line}`;
  const console = globalThis.console;
  if (console) return console.error(line);
  const utf8 = unescape(encodeURIComponent(line + "\n"));
  getStderr().blockingWriteAndFlush(Uint8Array.from(utf8, (c) => c.charCodeAt(0)));
}

/** @type {Agent | undefined} made in the first turn: whoami needs the host */
let agent;

/** @type {typeof import("teamhost:agent/handler@0.1.0")} */
export const handler = { handleTurn: failsAsText(handleTurn) };

/**
 * One turn: what woke the teammate is in `turn.kind`.
 * @param {Turn} turn
 * @returns {TurnOutcome}
 */
function handleTurn(turn) {
  agent ??= new Agent();
  return agent.handle(turn);
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
