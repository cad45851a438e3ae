// The Web Worker: loads Pyodide (served by this site from ./pyodide/, no CDN), installs
// golem's wheel and its three dependencies (./wheels/, listed in ./wheels/index.json) by
// unpacking them into site-packages, loads history_tool.py, then answers each
// {id, text} message with {id, result} (history_tool.examine's JSON) or {id, error}.
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

const ready = start();
ready.then(
  ({ version }) => postMessage({ ready: true, version }),
  (error) => postMessage({ ready: false, error: String(error) }),
);

onmessage = async (event) => {
  const { id, text } = event.data;
  try {
    const { tool } = await ready;
    postMessage({ id, result: JSON.parse(tool.examine(text)) });
  } catch (error) {
    postMessage({ id, error: String(error) });
  }
};
