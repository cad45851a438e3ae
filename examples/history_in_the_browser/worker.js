// The Web Worker: loads Pyodide (served by this site from ./pyodide/, no CDN), installs
// golem's wheel and its three dependencies (./wheels/, listed in ./wheels/index.json) by
// unpacking them into site-packages, loads history_tool.py, then answers each
// {id, text} message with {id, result} (history_tool.examine's JSON) or {id, error}.
// Input nested more than MAX_NESTING deep is refused before it reaches Python (below).
importScripts("./pyodide/pyodide.js");

async function start() {
  const pyodide = await loadPyodide({ indexURL: new URL("./pyodide/", self.location).href });
  const sitePackages = pyodide.runPython("import site; site.getsitepackages()[0]");
  const wheels = await (await fetch("./wheels/index.json")).json();
  for (const name of wheels) {
    const response = await fetch(`./wheels/${name}`);
    if (!response.ok) throw new Error(`wheels/${name}: HTTP ${response.status}`);
    pyodide.unpackArchive(await response.arrayBuffer(), "wheel", { extractDir: sitePackages });
  }
  const source = await (await fetch("./history_tool.py")).text();
  pyodide.FS.writeFile(`${sitePackages}/history_tool.py`, source);
  const tool = pyodide.pyimport("history_tool");
  const version = pyodide.runPython("import sys; sys.version.split()[0]");
  return { tool, version: `Pyodide ${pyodide.version}, Python ${version}` };
}

// golem_core refuses values nested deeper than 128 anyway (MAX_UNKNOWN_DEPTH), but in a
// browser worker CPython's JSON scanner overflows the WebAssembly stack on input nested a
// few thousand deep before its recursion guard fires, and Pyodide dies (a fatal
// RangeError, every later call fails). So the worker refuses such input before Python.
const MAX_NESTING = 1000;

function nesting(text) {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === "\\") i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === "[" || c === "{") deepest = Math.max(deepest, ++depth);
    else if (c === "]" || c === "}") depth--;
  }
  return deepest;
}

const ready = start();
ready.then(
  ({ version }) => postMessage({ ready: true, version }),
  (error) => postMessage({ ready: false, error: String(error) }),
);

onmessage = async (event) => {
  const { id, text } = event.data;
  try {
    const { tool } = await ready;
    const deepest = nesting(text);
    if (deepest > MAX_NESTING) {
      postMessage({
        id,
        result: { ok: false, error: `JSON nested ${deepest} deep: refused (more than ${MAX_NESTING})` },
      });
      return;
    }
    postMessage({ id, result: JSON.parse(tool.examine(text)) });
  } catch (error) {
    postMessage({ id, error: String(error) });
  }
};
