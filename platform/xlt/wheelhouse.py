"""xlt for a machine with no package index: a wheelhouse built where the index is, installed where it is not.

    make wheelhouse PYTHON_VERSION=3.12 TARGET_HAS=configs/install/gpu-node.txt     # a connected machine
    PYTHONPATH=platform python3 -m xlt.wheelhouse install dist/wheelhouse            # the node, in the checkout
    python -m xlt.wheelhouse rehearse --out benchmarks/airgap.md                     # both, on this CPU

``build`` resolves xlt (its core, or ``--extras``) for the target's Python and platform with pip's resolver,
against the versions the target already holds (``--target-has``: lines of ``name==version``, or a bare
``name`` trusted to satisfy xlt's range; a ``pip freeze`` of the target is best). It downloads every wheel of
the resolution except those packages and everything they require (the target has them too), checks each
against the index's sha256, and writes them as one tar cut into parts of at most ``--part-mib`` MiB, for
transfers of a bounded size: ``SHA256SUMS`` (``sha256sum -c`` reads it) and ``wheelhouse.json`` (what was
resolved for what, each wheel's sha256 and size) beside them.

``install`` checks the parts' sums, reassembles and unpacks them, checks every wheel against
``wheelhouse.json``, and runs ``pip install --no-index --find-links`` of xlt into the Python running it (the
node's, or a virtualenv made with ``--system-site-packages`` that sees its torch): nothing is fetched. It ends
by importing xlt and printing the versions it runs with.

``rehearse`` does both on this CPU, end to end, in the checkout (it needs the index once, ~3 GB for CUDA torch):
1. the node's image, a Python 3.11 venv (``.cache/airgap/node-image``, kept between runs) of the versions of
   ``configs/install/gpu-node.txt``, from the index; its ``pip freeze`` is what the node has;
2. ``make wheelhouse`` for that freeze, then ``install`` with a fresh copy of the image first on ``PATH``, pip's
   configuration ignored and its index an address nothing answers: every wheel comes from the parts;
3. ``jobs/gpu_check.py --smoke`` with the node's Python: every job's smoke on the node's versions, offline, with
   what the node lacks from ``gpu_check.py --prepare``;
4. the wheelhouse the GPU node needs (Python 3.12, into ``dist/wheelhouse``): its parts and sizes.
It writes what it found, with the times, to ``--out``.

Standard library only on the install side, which runs before xlt and its dependencies are there; ``build``
also uses ``packaging`` (a dependency of transformers) to read requirement markers.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Iterable, Iterator
from pathlib import Path

MIB = 1024 * 1024
PART_MIB = 60
MANIFEST, SUMS = "wheelhouse.json", "SHA256SUMS"
# manylinux tags a Linux x86_64 node with glibc >= 2.17 runs: every wheel on PyPI for it carries one of these.
LINUX_X86_64 = (*(f"manylinux_2_{minor}_x86_64" for minor in range(39, 16, -1)), "manylinux2014_x86_64")
CHUNK = 4 * MIB


def normalized(name: str) -> str:
    """A distribution's name as pip compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def read_target_has(path: Path) -> dict[str, str | None]:
    """What the target holds, ``name -> version`` (``None``: any), from a ``pip freeze`` or a list like it;
    ``file:line`` of a line that is neither."""
    has: dict[str, str | None] = {}
    for number, raw in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        name, _, version = line.partition(" @ ")[0].partition("==")
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name.strip()) or (version and " @ " in line):
            raise ValueError(f"{path}:{number}: expected name, name==version or name @ url, got {raw!r}")
        has[normalized(name.strip())] = version.strip() or None
    return has


def target_environment(python_version: str) -> dict[str, str]:
    """The marker environment of a CPython ``python_version`` on Linux x86_64."""
    return {"python_version": python_version, "python_full_version": f"{python_version}.0",
            "implementation_name": "cpython", "platform_python_implementation": "CPython",
            "sys_platform": "linux", "platform_system": "Linux", "platform_machine": "x86_64", "os_name": "posix"}


def already_there(report: dict, has: dict[str, str | None], python_version: str) -> set[str]:
    """The resolved packages the target holds: those it lists and, transitively, what they require on the
    target (with the extras each requirement names: torch's CUDA libraries are ``cuda-toolkit[cufft, ...]``)."""
    from packaging.requirements import Requirement

    environment = target_environment(python_version)
    requires = {normalized(item["metadata"]["name"]): item["metadata"].get("requires_dist", [])
                for item in report["install"]}
    todo: list[tuple[str, frozenset[str]]] = [(name, frozenset()) for name in requires if name in has]
    seen: set[tuple[str, frozenset[str]]] = set()
    while todo:
        name, extras = todo.pop()
        if (name, extras) in seen:
            continue
        seen.add((name, extras))
        for text in requires.get(name, []):
            requirement = Requirement(text)
            marker = requirement.marker
            if marker is None or any(marker.evaluate({**environment, "extra": extra}) for extra in ("", *extras)):
                todo.append((normalized(requirement.name), frozenset(requirement.extras)))
    return {name for name, _ in seen} & set(requires)


def resolve(requirement: str, python_version: str, has: dict[str, str | None], work: Path) -> dict:
    """pip's resolution of ``requirement`` for the target (binary wheels only), with its versions pinned."""
    constraints = work / "constraints.txt"
    constraints.write_text("".join(f"{name}=={version}\n" for name, version in has.items() if version))
    report = work / "report.json"
    platforms = [arg for tag in LINUX_X86_64 for arg in ("--platform", tag)]
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--report",
                           str(report), "--only-binary=:all:", "--python-version", python_version, *platforms,
                           "-c", str(constraints), requirement], capture_output=True, text=True)
    if proc.returncode != 0:  # pip's own account of the conflict, e.g. an exact pin against the target's version
        why = [line for line in proc.stdout.splitlines() + proc.stderr.splitlines()
               if line.strip() and "━" not in line and not line.startswith(("WARNING", "Collecting", "  Using",
                                                                                 "  Downloading"))]
        raise ValueError(f"pip cannot resolve {requirement} for Python {python_version} against the target's "
                         "versions:\n" + "\n".join(why[-15:]))
    return json.loads(report.read_text())


def fetch(url: str, expected: str, into: Path) -> Path:
    """The wheel at ``url`` in ``into``, its sha256 checked."""
    path = into / urllib.parse.unquote(urllib.parse.urlsplit(url).path.rsplit("/", 1)[1])
    with urllib.request.urlopen(url) as response, open(path, "wb") as out:
        shutil.copyfileobj(response, out, CHUNK)
    if sha256(path) != expected:
        raise ValueError(f"{url}: sha256 {sha256(path)} is not the index's {expected}")
    return path


def write_parts(files: Iterable[Path], out: Path, stem: str, part_bytes: int) -> list[Path]:
    """``files`` as one uncompressed tar (wheels are zips already) cut into ``stem.tar.000``, ``.001``, ...
    of at most ``part_bytes`` each."""
    parts: list[Path] = []

    class Parts:  # a file object that starts the next part whenever the current one is full
        def __init__(self) -> None:
            self.current, self.left = None, 0

        def write(self, data: bytes) -> int:
            view = memoryview(data)
            while view:
                if self.left == 0:
                    if self.current is not None:
                        self.current.close()
                    parts.append(out / f"{stem}.tar.{len(parts):03d}")
                    self.current, self.left = open(parts[-1], "wb"), part_bytes
                n = min(self.left, len(view))
                self.current.write(view[:n])
                view, self.left = view[n:], self.left - n
            return len(data)

        def close(self) -> None:
            if self.current is not None:
                self.current.close()

    sink = Parts()
    with tarfile.open(fileobj=sink, mode="w|", format=tarfile.PAX_FORMAT) as tar:
        for path in files:
            tar.add(path, arcname=path.name)
    sink.close()
    return parts


def pack(wheels: Path, manifest: dict, out: Path, stem: str, part_bytes: int) -> list[Path]:
    """``manifest``'s wheels (in ``wheels``) and the manifest itself as parts in ``out``; beside them the
    manifest with the parts' sizes and sums, and ``SHA256SUMS``."""
    (wheels / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    parts = write_parts([*(wheels / r["file"] for r in manifest["wheels"]), wheels / MANIFEST], out, stem, part_bytes)
    summed = [{"file": p.name, "bytes": p.stat().st_size, "sha256": sha256(p)} for p in parts]  # each read once
    (out / MANIFEST).write_text(json.dumps({**manifest, "parts": summed}, indent=1) + "\n")
    (out / SUMS).write_text("".join(f"{part['sha256']}  {part['file']}\n" for part in summed))
    return parts


def build(args: argparse.Namespace) -> None:
    out, has = Path(args.out), read_target_has(args.target_has)
    if out.exists() and any(out.iterdir()):
        raise FileExistsError(f"{out} is not empty: remove it or name another --out")
    out.mkdir(parents=True, exist_ok=True)
    repo = Path(__file__).resolve().parents[2]
    with tempfile.TemporaryDirectory(prefix="xlt-wheelhouse-") as tmp:
        work, wheels = Path(tmp), Path(tmp) / "wheels"
        wheels.mkdir()
        # Built from a copy of what the wheel holds: setuptools leaves a build/ folder in the tree it builds.
        source = work / "source"
        shutil.copytree(repo / "platform", source / "platform",
                        ignore=shutil.ignore_patterns("*.egg-info", "__pycache__"))
        for name in ("pyproject.toml", "README.md"):
            shutil.copy(repo / name, source / name)
        subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(work),
                        str(source)], check=True)
        (project,) = work.glob("xlt-*.whl")
        requirement = f"xlt[{args.extras}] @ {project.as_uri()}" if args.extras else f"xlt @ {project.as_uri()}"
        report = resolve(requirement, args.python_version, has, work)
        there = already_there(report, has, args.python_version)
        records = []
        for item in report["install"]:
            name, version = item["metadata"]["name"], item["metadata"]["version"]
            if normalized(name) in there:
                continue
            url, expected = item["download_info"]["url"], item["download_info"]["archive_info"]["hashes"]["sha256"]
            path = fetch(url, expected, wheels)
            records.append({"name": name, "version": version, "file": path.name, "sha256": expected,
                            "bytes": path.stat().st_size})
            print(f"{path.name:<80} {path.stat().st_size / MIB:7.1f} MiB", flush=True)
        manifest = {"requirement": f"xlt[{args.extras}]" if args.extras else "xlt",
                    "python_version": args.python_version, "platforms": list(LINUX_X86_64),
                    "target_has": {name: version for name, version in sorted(has.items())},
                    "left_out": sorted(there), "wheels": records}
        parts = pack(wheels, manifest, out, f"xlt-wheelhouse-py{args.python_version.replace('.', '')}",
                     args.part_mib * MIB)
    total = sum(r["bytes"] for r in records)
    print(f"{len(records)} wheels, {total / MIB:.1f} MiB, in {len(parts)} parts of at most {args.part_mib} MiB "
          f"({', '.join(f'{p.name} {p.stat().st_size / MIB:.1f}' for p in parts)}); left out, the target has them: "
          f"{len(there)} packages. {out}", flush=True)


class Joined:
    """The parts read one after the other as one file, for ``tarfile``'s stream mode."""

    def __init__(self, paths: list[Path]) -> None:
        self.paths: Iterator[Path] = iter(paths)
        self.current = None

    def read(self, size: int = -1) -> bytes:
        while True:
            if self.current is None:
                path = next(self.paths, None)
                if path is None:
                    return b""
                self.current = open(path, "rb")
            data = self.current.read(size)
            if data:
                return data
            self.current.close()
            self.current = None


def checked_parts(directory: Path) -> list[Path]:
    """The parts ``SHA256SUMS`` lists, in order, each present with its sum; else which is not."""
    sums = directory / SUMS
    if not sums.is_file():
        raise FileNotFoundError(f"{sums}: not found; expected the {SUMS} that `make wheelhouse` writes")
    parts = []
    for number, line in enumerate(sums.read_text().splitlines(), 1):
        expected, _, name = line.partition("  ")
        path = directory / name
        if not path.is_file():
            raise FileNotFoundError(f"{sums}:{number}: part {name} is missing from {directory}")
        if sha256(path) != expected:
            raise ValueError(f"{sums}:{number}: part {name} is damaged (sha256 {sha256(path)}); transfer it again")
        parts.append(path)
    return parts


def unpack(directory: Path, into: Path) -> dict:
    """The wheels of ``directory``'s parts in ``into``, each checked against the manifest; the manifest."""
    with tarfile.open(fileobj=Joined(checked_parts(directory)), mode="r|") as tar:
        for member in tar:
            if not member.isfile() or Path(member.name).name != member.name:
                raise ValueError(f"{directory}: unexpected entry {member.name!r} in the wheelhouse")
            with tar.extractfile(member) as source, open(into / member.name, "wb") as target:
                shutil.copyfileobj(source, target, CHUNK)
    manifest = json.loads((into / MANIFEST).read_text())
    for record in manifest["wheels"]:
        if sha256(into / record["file"]) != record["sha256"]:
            raise ValueError(f"{record['file']}: sha256 differs from {MANIFEST}'s")
    return manifest


def install(args: argparse.Namespace) -> None:
    directory, python = Path(args.wheelhouse), sys.executable
    # Without the PYTHONPATH that may have found this module in a checkout: pip would take the checkout's
    # xlt for an installed one, and the last check would import it instead of the installed package.
    installed = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    with tempfile.TemporaryDirectory(prefix="xlt-wheels-") as tmp:
        manifest = unpack(directory, Path(tmp))
        print(f"{len(manifest['wheels'])} wheels checked; installing {manifest['requirement']} with {python}",
              flush=True)
        subprocess.run([python, "-m", "pip", "install", "--no-index", "--find-links", tmp,
                        manifest["requirement"]], check=True, env=installed)
    versions = ("import importlib.metadata as m; print(', '.join(f'{p} {m.version(p)}' for p in "
                "('xlt', 'torch', 'transformers', 'sentence-transformers', 'ray')))")
    subprocess.run([python, "-c", f"import xlt; {versions}"], check=True, cwd=tempfile.gettempdir(), env=installed)


def _run(command: list[str], **kwargs: object) -> tuple[float, str]:
    """``command`` in the checkout, checked: its seconds and output (whose tail is echoed)."""
    start = time.monotonic()
    proc = subprocess.run(command, capture_output=True, text=True, **kwargs)
    print((proc.stdout + proc.stderr)[-3000:], flush=True)
    if proc.returncode != 0:
        raise subprocess.CalledProcessError(proc.returncode, command)
    return time.monotonic() - start, proc.stdout + proc.stderr


def _wheelhouse(*variables: str) -> tuple[float, dict]:
    """``make wheelhouse`` with ``variables``: its seconds and manifest."""
    seconds, _ = _run(["make", "wheelhouse", *variables])
    return seconds, json.loads(Path("dist/wheelhouse/wheelhouse.json").read_text())


def rehearse(args: argparse.Namespace) -> None:
    from xlt.hardware import cpu_model
    from xlt.report import markdown_table

    node_has, work = Path("configs/install/gpu-node.txt"), Path(".cache/airgap").resolve()
    if not (node_has.is_file() and Path("jobs/gpu_check.py").is_file()):
        raise FileNotFoundError(f"{Path.cwd()}: not xlt's checkout (no {node_has} or jobs/gpu_check.py); run "
                                "the rehearsal from the checkout's root")
    # The node's Python sees nothing of this checkout: with PYTHONPATH=platform its pip would list xlt (the
    # editable install's metadata lies there) as installed, and the wheelhouse would leave everything out.
    node_env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    image = work / "node-image"
    if not (image / ".complete").exists():
        shutil.rmtree(image, ignore_errors=True)
        _run([args.python, "-m", "venv", str(image)], env=node_env)
        wanted = [line.split("#")[0].strip() for line in node_has.read_text().splitlines()]
        _run([str(image / "bin" / "python"), "-m", "pip", "install", "--quiet", *filter(None, wanted)], env=node_env)
        (image / ".complete").touch()
    freeze = work / "node-freeze.txt"
    freeze.write_text(_run([str(image / "bin" / "python"), "-m", "pip", "freeze"], env=node_env)[1])
    build311, manifest311 = _wheelhouse("PYTHON_VERSION=3.11", f"TARGET_HAS={freeze}")

    node = work / "node"
    shutil.rmtree(node, ignore_errors=True)
    shutil.copytree(image, node, symlinks=True)
    offline = {**node_env, "PIP_CONFIG_FILE": os.devnull, "PIP_INDEX_URL": "http://127.0.0.1:9/simple",
               "PATH": f"{node / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    installed_s, installed = _run(["sh", "-c", "PYTHONPATH=platform python3 -m xlt.wheelhouse install "
                                   "dist/wheelhouse"], env=offline)
    _run([sys.executable, "jobs/gpu_check.py", "--prepare"])
    check = work / "check"
    shutil.rmtree(check, ignore_errors=True)
    smoke_s, _ = _run([str(node / "bin" / "python"), "jobs/gpu_check.py", "--smoke", "--out", str(check)],
                      env={k: v for k, v in offline.items() if k != "XLT_DATA_DIR"})

    build312, manifest312 = _wheelhouse("PYTHON_VERSION=3.12")
    parts = [{"part": p["file"], "MiB": f"{p['bytes'] / MIB:.1f}", "sha256": f"`{p['sha256'][:16]}…`"}
             for p in manifest312["parts"]]
    ended = [line for line in installed.splitlines() if line.startswith("xlt ")][-1]
    lines = [
        "# The air-gapped install", "",
        f"Command: `{shlex.join(['python', '-m', 'xlt.wheelhouse', *sys.argv[1:]])}`  ",
        f"Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. CPU: {cpu_model()} ({os.cpu_count()} cores). "
        f"This machine: Python {sys.version.split()[0]}; the node's image here: Python 3.11 with {node_has}'s "
        "versions.", "",
        "## The GPU node's wheelhouse (Python 3.12)", "",
        f"`make wheelhouse PYTHON_VERSION=3.12` ({build312:.0f} s here): {len(manifest312['wheels'])} wheels, "
        f"{sum(w['bytes'] for w in manifest312['wheels']) / MIB:.1f} MiB, leaving out "
        f"{len(manifest312['left_out'])} packages the node has ({node_has} and what they require).", "",
        markdown_table(parts), "",
        "Wheels over 5 MiB: " + ", ".join(f"{w['file'].split('-')[0]} {w['bytes'] / MIB:.1f}"
                                          for w in manifest312["wheels"] if w["bytes"] > 5 * MIB) + ".", "",
        "## Installed offline into a venv of the node's versions (Python 3.11, this CPU)", "",
        f"- The wheelhouse for the image's `pip freeze`: {len(manifest311['wheels'])} wheels in "
        f"{len(manifest311['parts'])} parts, built in {build311:.0f} s.",
        f"- `PYTHONPATH=platform python3 -m xlt.wheelhouse install dist/wheelhouse` with the node's `python3` first "
        f"on `PATH`, pip's configuration ignored and its index unreachable: {installed_s:.0f} s; it ends with "
        f"`{ended}`.",
        f"- `python jobs/gpu_check.py --smoke` with that Python, offline: {smoke_s:.0f} s; its report:", "",
        *[f"> {line}" if line else ">" for line in (check / "gpu.md").read_text().splitlines()], "",
    ]
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m xlt.wheelhouse", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    b = commands.add_parser("build", help="on a machine with the index: the wheels xlt needs that the target lacks")
    b.add_argument("--python-version", required=True, help="the target's Python, e.g. 3.12")
    b.add_argument("--target-has", required=True,
                   help="what the target holds: its pip freeze, or a list such as configs/install/gpu-node.txt")
    b.add_argument("--extras", default="", help="xlt's extras to include, comma-separated (default: the core)")
    b.add_argument("--out", default="dist/wheelhouse")
    b.add_argument("--part-mib", type=int, default=PART_MIB, help="the largest part, in MiB")
    i = commands.add_parser("install", help="on the target: check, unpack and pip install --no-index")
    i.add_argument("wheelhouse", help="the directory of the parts and SHA256SUMS")
    r = commands.add_parser("rehearse", help="on this CPU, in the checkout: both ends, offline, into a venv of the "
                            "node's versions, with the GPU check's smoke")
    r.add_argument("--python", default="python3.11", help="the interpreter for the node's image here")
    r.add_argument("--out", default="benchmarks/airgap.md", help="what it found (default: benchmarks/airgap.md)")
    args = parser.parse_args(argv)
    try:
        {"build": build, "install": install, "rehearse": rehearse}[args.command](args)
    except (ValueError, FileNotFoundError, FileExistsError) as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    except subprocess.CalledProcessError as e:
        print(f"error: {' '.join(map(str, e.cmd[:6]))} ... exited with {e.returncode}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
