// What the JS engines give a teammate beyond ECMAScript, for the type
// checker (tsconfig.json). StarlingMonkey (componentize-js) has `console`
// (console.error goes to the guest log); QuickJS (jco componentize --backend
// qjs) has none, so `console` may be undefined. Neither has fetch or any
// other network API: the teammate world has no wasi:http.
declare var console: { log(...data: unknown[]): void; error(...data: unknown[]): void } | undefined;
