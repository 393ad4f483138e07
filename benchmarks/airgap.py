"""The air-gapped install, end to end on this CPU, and the wheelhouse for the GPU node; writes
``benchmarks/airgap.md``.

    python benchmarks/airgap.py                      # needs the package index (once, ~3 GB for CUDA torch)

1. The node's image: a Python 3.11 venv (``.cache/airgap/node-image``, kept between runs) with the versions of
   ``configs/install/gpu-node.txt`` (torch 2.11, transformers 5.17, sentence-transformers 6.0.1; the others
   as the index has them), from the index; its ``pip freeze`` is what the node has.
2. README's two commands as typed, for that node: ``make wheelhouse PYTHON_VERSION=3.11 TARGET_HAS=<the
   freeze>``, then, on the node (a fresh copy of the image, first on ``PATH``), ``PYTHONPATH=platform python3
   -m xlt.wheelhouse install dist/wheelhouse`` with pip's configuration ignored and its index an address
   nothing answers: every wheel comes from the parts.
3. ``benchmarks/gpu_check.py --rehearse`` with the node's Python: every job's smoke on the node's versions,
   offline, with what the node lacks from ``gpu_check.py --prepare``.
4. The wheelhouse the GPU node needs, ``make wheelhouse PYTHON_VERSION=3.12`` (into ``dist/wheelhouse``,
   where the node's install reads it): its parts and sizes.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WORK = REPO / ".cache" / "airgap"
NODE_HAS = REPO / "configs" / "install" / "gpu-node.txt"
MIB = 1024 * 1024


def run(command: list[str], **kwargs) -> tuple[float, str]:
    """``command`` from the repo root, checked; its seconds and output (echoed)."""
    start = time.monotonic()
    proc = subprocess.run(command, cwd=REPO, capture_output=True, text=True, **kwargs)
    output = proc.stdout + proc.stderr
    print(output[-3000:], flush=True)
    if proc.returncode != 0:
        sys.exit(f"failed ({proc.returncode}): {' '.join(map(str, command))}")
    return time.monotonic() - start, output


def node_image(python: str) -> Path:
    """The venv standing for the node's Python, built once from the index."""
    image = WORK / "node-image"
    if not (image / ".complete").exists():
        shutil.rmtree(image, ignore_errors=True)
        run([python, "-m", "venv", str(image)])
        wanted = [line.split("#")[0].strip() for line in NODE_HAS.read_text().splitlines()]
        run([str(image / "bin" / "python"), "-m", "pip", "install", "--quiet", *filter(None, wanted)])
        (image / ".complete").touch()
    return image


def wheelhouse(*variables: str) -> tuple[float, dict]:
    """``make wheelhouse`` with ``variables``; its seconds and manifest."""
    seconds, _ = run(["make", "wheelhouse", *variables])
    return seconds, json.loads((REPO / "dist" / "wheelhouse" / "wheelhouse.json").read_text())


def parts_table(manifest: dict) -> list[str]:
    rows = ["| part | MiB | sha256 |", "|---|---|---|"]
    rows += [f"| {p['file']} | {p['bytes'] / MIB:.1f} | `{p['sha256'][:16]}…` |" for p in manifest["parts"]]
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--python", default="python3.11", help="the interpreter of the node's image here")
    parser.add_argument("--output", default=str(REPO / "benchmarks" / "airgap.md"))
    args = parser.parse_args()
    from xlt.hardware import cpu_model
    from xlt.report import command_line

    WORK.mkdir(parents=True, exist_ok=True)
    image = node_image(args.python)
    freeze = WORK / "node-freeze.txt"
    freeze.write_text(run([str(image / "bin" / "python"), "-m", "pip", "freeze"])[1])
    build311, manifest311 = wheelhouse("PYTHON_VERSION=3.11", f"TARGET_HAS={freeze}")

    node = WORK / "node"
    shutil.rmtree(node, ignore_errors=True)
    shutil.copytree(image, node, symlinks=True)
    offline = {**os.environ, "PIP_CONFIG_FILE": os.devnull, "PIP_INDEX_URL": "http://127.0.0.1:9/simple",
               "PATH": f"{node / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    python = str(node / "bin" / "python")
    installed_s, installed = run(["sh", "-c", "PYTHONPATH=platform python3 -m xlt.wheelhouse install dist/wheelhouse"],
                                 env=offline)
    run([sys.executable, "benchmarks/gpu_check.py", "--prepare"])
    check = WORK / "check"
    shutil.rmtree(check, ignore_errors=True)
    rehearsal = {k: v for k, v in offline.items() if k != "XLT_DATA_DIR"}
    rehearse_s, _ = run([python, "benchmarks/gpu_check.py", "--rehearse", "--out", str(check)], env=rehearsal)

    build312, manifest312 = wheelhouse("PYTHON_VERSION=3.12")
    wheels312 = sum(w["bytes"] for w in manifest312["wheels"])
    lines = [
        "# The air-gapped install", "",
        f"Command: `{command_line()}`  ",
        f"Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. CPU: {cpu_model()} "
        f"({os.cpu_count()} cores). This machine: Python {sys.version.split()[0]}; the node's image here: "
        f"Python 3.11 with {NODE_HAS.relative_to(REPO)}'s versions.", "",
        "## The GPU node's wheelhouse (Python 3.12)", "",
        f"`make wheelhouse PYTHON_VERSION=3.12` ({build312:.0f} s here): {len(manifest312['wheels'])} wheels, "
        f"{wheels312 / MIB:.1f} MiB, leaving out {len(manifest312['left_out'])} packages the node has "
        f"({NODE_HAS.relative_to(REPO)} and what they require).", "",
        *parts_table(manifest312), "",
        "Wheels over 5 MiB: " + ", ".join(f"{w['file'].split('-')[0]} {w['bytes'] / MIB:.1f}"
                                          for w in manifest312["wheels"] if w["bytes"] > 5 * MIB) + ".", "",
        "## Installed offline into a venv of the node's versions (Python 3.11, this CPU)", "",
        f"- The wheelhouse for the image's `pip freeze`: {len(manifest311['wheels'])} wheels in "
        f"{len(manifest311['parts'])} parts, built in {build311:.0f} s.",
        f"- `PYTHONPATH=platform python3 -m xlt.wheelhouse install dist/wheelhouse` with the node's `python3` first "
        f"on `PATH`, pip's configuration ignored and its index unreachable: {installed_s:.0f} s; it ends with "
        f"`{[line for line in installed.splitlines() if line.startswith('xlt ')][-1]}`.",
        f"- `python benchmarks/gpu_check.py --rehearse` with that Python, offline: {rehearse_s:.0f} s; its report:", "",
        *[f"> {line}" if line else ">" for line in (check / "gpu.md").read_text().splitlines()], "",
    ]
    Path(args.output).write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
