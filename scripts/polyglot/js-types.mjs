// Generates TypeScript declarations (.d.ts) for a JavaScript teammate from
// teamhost's WIT, the way `jco guest-types` does, for editors and for
// `tsc --checkJs`. scripts/build-polyglot and the JS template's `build` run it:
//
//   node js-types.mjs NODE_DIR WIT_DIR OUT_DIR
//
// NODE_DIR is the toolchain's node directory (target/polyglot/node). It works
// around two problems of jco 1.35.0 (with preview2-shim 0.26.1):
// - `jco guest-types wit/` fails with "failed to read path for WIT ... No such
//   file or directory (os error 44)": the WASI shim that jco's WIT parser runs
//   on starts with no preopened directory. We preopen WIT_DIR first.
// - a WIT doc comment containing `*/` (tools.wit: `src/**/*.rs`) ends the
//   generated /** ... */ comment early and the .d.ts does not parse. We
//   escape it as `*\/`.
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

const [nodeDir, witArg, outArg] = process.argv.slice(2);
if (!nodeDir || !witArg || !outArg) {
  console.error("usage: node js-types.mjs NODE_DIR WIT_DIR OUT_DIR");
  process.exit(2);
}
const wit = resolve(witArg);
const out = resolve(outArg);
const transpile = join(resolve(nodeDir), "node_modules/@bytecodealliance/jco-transpile");
const shim = join(transpile, "node_modules/@bytecodealliance/preview2-shim/dist/nodejs/filesystem.js");

const { _setPreopens } = await import(pathToFileURL(shim).href);
_setPreopens({ [wit]: wit });
const { generateGuestTypes } = await import(pathToFileURL(join(transpile, "dist/index.js")).href);
const files = await generateGuestTypes(wit, { worldName: "teamhost:agent/teammate", outDir: out });

rmSync(out, { recursive: true, force: true });
for (const [path, bytes] of Object.entries(files)) {
  const text = new TextDecoder().decode(bytes).split("\n").map((line) => {
    const t = line.trim();
    return t.includes("*/") && t !== "*/" && !t.startsWith("/**") ? line.replaceAll("*/", "*\\/") : line;
  });
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, "// Generated from wit/ by scripts/polyglot/js-types.mjs: do not edit.\n" + text.join("\n"));
}
console.error(`js-types: ${Object.keys(files).length} declaration files in ${out}`);
