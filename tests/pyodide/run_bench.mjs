// bench/pyodide.py's Pyodide side: stdin {"wheels": [paths], "module": bench/pyodide.py,
// "data": the workload's JSON file}. Installs the wheels, imports the module, prints
// {pyodide, node, ...measure(data)} as JSON (or {error}) on the last line of stdout.
import { readFileSync } from "node:fs";
import { loadPyodide } from "pyodide";

const config = JSON.parse(readFileSync(0, "utf8"));
let report;
try {
  const pyodide = await loadPyodide();
  const toStderr = { write: (bytes) => (process.stderr.write(bytes), bytes.length) };
  pyodide.setStdout(toStderr);
  pyodide.setStderr(toStderr);
  const sitePackages = pyodide.runPython("import site; site.getsitepackages()[0]");
  for (const wheel of config.wheels) {
    pyodide.unpackArchive(new Uint8Array(readFileSync(wheel)), "wheel", {
      extractDir: sitePackages,
    });
  }
  pyodide.FS.mkdir("/bench");
  pyodide.FS.writeFile("/bench/golem_bench_pyodide.py", readFileSync(config.module));
  pyodide.FS.writeFile("/bench/history.json", readFileSync(config.data));
  pyodide.runPython("import sys; sys.path.insert(0, '/bench')");
  const measured = pyodide.runPython(
    "import json, golem_bench_pyodide as b\n" +
      "json.dumps(b.measure(open('/bench/history.json', 'rb').read()))",
  );
  report = { pyodide: pyodide.version, node: process.versions.node, ...JSON.parse(measured) };
} catch (error) {
  report = { error: String(error) };
}
console.log(JSON.stringify(report));
