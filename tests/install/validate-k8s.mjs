// validate-k8s.mjs - validate Kubernetes manifests against the Kubernetes API
// schemas, document by document.
//
// usage: node validate-k8s.mjs FILE...
//
// Two checks per YAML document, both from the kubernetes-models package
// (generated from the Kubernetes OpenAPI definitions):
//   1. schema: the JSON-schema validator of the document's apiVersion/kind
//      (types, enums, required fields, formats);
//   2. strict fields: the same object type-checked by the TypeScript compiler
//      against the package's interface for that kind. Object literals get
//      excess-property checks, so an unknown or misspelt field anywhere
//      (readOnlyRootFileSystem, hostnetwork, ...) is an error. The OpenAPI
//      schemas alone accept unknown fields, and the kubelet drops them
//      silently from a static pod.
// Prints one "ok" or "FAIL" line per document and a last line
//   SUMMARY {"checked": N, "failed": M}
// Exit status 0 only when every document passed.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseAllDocuments } from "yaml";
import ts from "typescript";

const here = dirname(fileURLToPath(import.meta.url));
const files = process.argv.slice(2);
if (files.length === 0) {
  console.error("usage: node validate-k8s.mjs FILE...");
  process.exit(2);
}

let checked = 0;
let failed = 0;
const strictDocs = [];

function label(file, index, obj) {
  const name = obj?.metadata?.name ?? "(no name)";
  return `${file}#${index} ${obj?.kind ?? "?"}/${name}`;
}

function fail(what, message) {
  failed++;
  console.log(`FAIL ${what}: ${message}`);
}

// apiVersion "v1" -> "v1", "apps/v1" -> "apps/v1": the module directory.
function modulePath(apiVersion, kind) {
  if (typeof apiVersion !== "string" || typeof kind !== "string" || !/^[A-Za-z]+$/.test(kind))
    return null;
  return `kubernetes-models/${apiVersion}/${kind}`;
}

for (const file of files) {
  let docs;
  try {
    docs = parseAllDocuments(readFileSync(file, "utf8"));
  } catch (e) {
    fail(file, `cannot read: ${e.message}`);
    continue;
  }
  for (let i = 0; i < docs.length; i++) {
    const doc = docs[i];
    if (doc.errors.length) {
      fail(`${file}#${i}`, `YAML: ${doc.errors.map((e) => e.message).join("; ")}`);
      continue;
    }
    const obj = doc.toJS();
    if (obj === null || obj === undefined) continue; // empty document
    checked++;
    const what = label(file, i, obj);
    const spec = modulePath(obj.apiVersion, obj.kind);
    if (!spec) {
      fail(what, "no apiVersion/kind");
      continue;
    }
    let mod;
    try {
      mod = await import(spec);
    } catch (e) {
      fail(what, `no schema for ${obj.apiVersion} ${obj.kind} (${spec})`);
      continue;
    }
    const Model = mod[obj.kind];
    if (typeof Model !== "function") {
      fail(what, `no model ${obj.kind} in ${spec}`);
      continue;
    }
    try {
      new Model(obj).validate();
    } catch (e) {
      fail(what, `schema: ${e.message}`);
      continue;
    }
    strictDocs.push({ what, spec, kind: obj.kind, obj });
  }
}

// Strict field check: one virtual TypeScript file, one typed constant per
// document; diagnostics are mapped back to documents by line.
if (strictDocs.length) {
  const lines = [];
  const owner = []; // line index -> strictDocs index
  strictDocs.forEach((d, n) => {
    lines.push(`import type { I${d.kind} as T${n} } from "${d.spec}";`);
    owner.push(n);
  });
  strictDocs.forEach((d, n) => {
    const body = `export const d${n}: T${n} = ${JSON.stringify(d.obj, null, 2)};`.split("\n");
    for (const l of body) {
      lines.push(l);
      owner.push(n);
    }
  });
  const virtualName = join(here, "__k8s_strict_check__.ts");
  const source = lines.join("\n");
  const options = {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    types: [],
  };
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (name, lang, ...rest) =>
    name === virtualName
      ? ts.createSourceFile(name, source, lang, true)
      : getSourceFile(name, lang, ...rest);
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (name) => name === virtualName || fileExists(name);
  const readFile = host.readFile.bind(host);
  host.readFile = (name) => (name === virtualName ? source : readFile(name));
  const program = ts.createProgram([virtualName], options, host);
  const bad = new Map(); // strictDocs index -> messages
  for (const diag of ts.getPreEmitDiagnostics(program)) {
    const text = ts.flattenDiagnosticMessageText(diag.messageText, "\n");
    if (!diag.file || diag.file.fileName !== virtualName) {
      fail("strict check", text);
      continue;
    }
    const { line } = diag.file.getLineAndCharacterOfPosition(diag.start ?? 0);
    const n = owner[line];
    if (!bad.has(n)) bad.set(n, []);
    bad.get(n).push(`${text} [at: ${lines[line].trim()}]`);
  }
  strictDocs.forEach((d, n) => {
    if (bad.has(n)) fail(d.what, `unknown field or wrong type: ${bad.get(n).join(" | ")}`);
    else console.log(`ok ${d.what}`);
  });
}

console.log(`SUMMARY ${JSON.stringify({ checked, failed })}`);
process.exit(failed ? 1 : 0);
