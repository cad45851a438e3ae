// golem_core's suite in Pyodide under Node (tests/test_pyodide.py runs this; see harness.py).
//
// stdin: {"root": clone, "wheels": [paths], "files": [suite paths relative to root],
//         "data_dirs": [dirs relative to root], "tests": [test paths], "env": {...},
//         "pytest_args": [...]}
// Loads the pinned npm `pyodide` (its files from node_modules: nothing from a CDN),
// unpacks each wheel into site-packages, copies the suite to /suite, runs
// suite_main.py's main() and prints its JSON report as the last line of stdout.
// Exit status 0 only when the report says ok.
import { readFileSync, readdirSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { loadPyodide } from "pyodide";

const here = dirname(fileURLToPath(import.meta.url));
const config = JSON.parse(readFileSync(0, "utf8"));

const started = Date.now();
const pyodide = await loadPyodide({
  env: { HOME: "/home/pyodide", ...config.env },
});
// Python's output goes to stderr: stdout carries only the report
const toStderr = { write: (bytes) => (process.stderr.write(bytes), bytes.length) };
pyodide.setStdout(toStderr);
pyodide.setStderr(toStderr);
const loaded = Date.now();

const sitePackages = pyodide.runPython("import site; site.getsitepackages()[0]");
for (const wheel of config.wheels) {
  pyodide.unpackArchive(new Uint8Array(readFileSync(wheel)), "wheel", {
    extractDir: sitePackages,
  });
}

function mkdirs(path) {
  let at = "";
  for (const part of path.split("/").filter(Boolean)) {
    at += `/${part}`;
    if (!pyodide.FS.analyzePath(at).exists) pyodide.FS.mkdir(at);
  }
}

function copy(rel) {
  const target = `/suite/${rel}`;
  mkdirs(dirname(target));
  pyodide.FS.writeFile(target, readFileSync(join(config.root, rel)));
}

function copyTree(rel) {
  for (const name of readdirSync(join(config.root, rel))) {
    const child = `${rel}/${name}`;
    if (statSync(join(config.root, child)).isDirectory()) copyTree(child);
    else copy(child);
  }
}

for (const rel of config.files) copy(rel);
for (const rel of config.data_dirs) copyTree(rel);

pyodide.FS.writeFile("/suite/suite_main.py", readFileSync(join(here, "suite_main.py")));
let report;
try {
  pyodide.runPython("import sys; sys.path.insert(0, '/suite')");
  const suite = pyodide.pyimport("suite_main");
  report = JSON.parse(
    suite.main(
      JSON.stringify({
        files: config.tests,
        pytest_args: config.pytest_args ?? [],
        guard: config.guard ?? true,
      }),
    ),
  );
} catch (error) {
  report = { ok: false, crashed: String(error) };
}
report.pyodide = pyodide.version;
report.load_seconds = (loaded - started) / 1000;
report.total_seconds = (Date.now() - started) / 1000;
console.log(JSON.stringify(report));
process.exit(report.ok ? 0 : 1);
