"""platform/ is a source root: the stdlib ``platform`` module must win everywhere. The code's
paper citations resolve inside the repository (``docs/references.md``)."""

from __future__ import annotations

import re
import subprocess
import sys

from conftest import REPO


def test_no_platform_package():
    assert not (REPO / "platform" / "__init__.py").exists()


def test_stdlib_platform_from_repo_root():
    code = "import platform, xlt; print(platform.system(), platform.__file__)"
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True).stdout
    system, path = out.split()
    assert system and not path.startswith(str(REPO))


def test_stdlib_platform_inside_ray_worker(ray_cluster):
    @ray_cluster.remote
    def probe() -> tuple[str, str]:
        import platform

        import xlt

        return platform.python_version(), xlt.__file__

    version, xlt_file = ray_cluster.get(probe.remote())
    assert version == __import__("platform").python_version()
    assert xlt_file.startswith(str(REPO / "platform" / "xlt"))


# --- references travel with the code ---------------------------------------------------------------

# The papers the code cites, by the short name docs/references.md lists them under.
SHORT_NAMES = ("Wang et al. 2022", "Chen et al. 2022", "Yu & Joty 2021", "Li et al. 2021", "Zhang et al. 2023")
CITING_DIRS = ("platform", "jobs", "configs", "search_spaces")
# Citations of the seed files outside the repository: "seed"/"seeds" and a number 000-004, or a path into seeds/.
SEED_CITATION = re.compile(r"\b[Ss]eeds?[ _]?00[0-4]\b|seeds/")
# Any citation of the five papers' authors, narrative "Yu & Joty (2021)" or parenthetical "Yu & Joty 2021".
AUTHOR_CITATION = re.compile(r"\b(Wang et al\.|Chen et al\.|Yu & Joty|Li et al\.|Zhang et al\.),? \(?(\d{4})\b")


def citing_files() -> list:
    """Text files under the code directories (build and cache directories left out)."""
    files = []
    for top in CITING_DIRS:
        for path in sorted((REPO / top).rglob("*")):
            parts = path.relative_to(REPO).parts
            if not path.is_file() or any(p == "__pycache__" or p.endswith(".egg-info") for p in parts):
                continue
            try:
                files.append((path, path.read_text(encoding="utf-8")))
            except UnicodeDecodeError:
                continue
    return files


def test_no_seed_file_citations():
    hits = [f"{path.relative_to(REPO)}:{no}: {line.strip()}"
            for path, text in citing_files() for no, line in enumerate(text.splitlines(), 1)
            if SEED_CITATION.search(line)]
    assert not hits, ("cite papers by their short name in docs/references.md, not by seed file:\n"
                      + "\n".join(hits))


def test_references_name_every_cited_paper():
    references = (REPO / "docs" / "references.md").read_text(encoding="utf-8")
    assert [n for n in SHORT_NAMES if n not in references] == []
    cited, unknown = set(), []
    for path, text in citing_files():
        for no, line in enumerate(text.splitlines(), 1):
            for m in AUTHOR_CITATION.finditer(line):
                name = f"{m[1]} {m[2]}"
                cited.add(name)
                if name not in SHORT_NAMES:
                    unknown.append(f"{path.relative_to(REPO)}:{no}: {name}")
    assert not unknown, "citations missing from docs/references.md:\n" + "\n".join(unknown)
    assert cited == set(SHORT_NAMES)  # every listed paper is cited, so the list stays the code's


def test_the_readmes_make_demo_at_another_seed_passes_its_options_to_the_job():
    import shlex

    (line,) = [line for line in (REPO / "README.md").read_text().splitlines() if line.startswith("make demo ARGS=")]
    command = shlex.split(line.split("  #")[0])
    out = subprocess.run([command[0], "-n", *command[1:]], cwd=REPO, capture_output=True, text=True, check=True).stdout
    assert "jobs/cotrain.py --set lm.optim.seed=1 --set emb.optim.seed=1 --set selection.seed=1" in out
