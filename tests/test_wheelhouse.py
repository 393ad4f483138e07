"""The wheelhouse (``xlt.wheelhouse``) without an index: what the target holds, the parts and their sums,
unpacking them. Building one from the index and installing it offline into a venv of a GPU node's versions
is ``python -m xlt.wheelhouse rehearse`` (it needs the index and 3 GB of CUDA torch)."""

from __future__ import annotations

import json
import os

import pytest

from xlt.wheelhouse import MANIFEST, SUMS, already_there, pack, read_target_has, sha256, unpack


def test_what_the_target_has_is_read_from_a_freeze_or_a_list(tmp_path):
    listed = tmp_path / "has.txt"
    listed.write_text("# the node\ntorch==2.11.0\nsentence_transformers==6.0.1  # pinned\nnumpy\n\n"
                      "xlt @ file:///opt/xlt-0.1.0-py3-none-any.whl\n")
    assert read_target_has(listed) == {"torch": "2.11.0", "sentence-transformers": "6.0.1", "numpy": None, "xlt": None}
    listed.write_text("torch==2.11.0\n-e git+https://example.org/x.git#egg=x\n")
    with pytest.raises(ValueError, match=rf"^{listed}:2: expected name, name==version or name @ url"):
        read_target_has(listed)


def test_what_the_target_has_covers_what_it_requires_on_the_target_extras_included():
    def item(name, *requires):
        return {"metadata": {"name": name, "version": "1", "requires_dist": list(requires)}}

    report = {"install": [
        item("Torch", "cuda-toolkit[cufft]==13; platform_system == 'Linux'", "numpy", "old; python_version < '3.10'",
             "docs; extra == 'docs'"),
        item("cuda_toolkit", "nvidia-cufft; extra == 'cufft'", "nvidia-cublas; extra == 'cublas'"),
        item("nvidia-cufft"), item("nvidia-cublas"), item("numpy"), item("old"), item("docs"), item("ray", "numpy")]}
    assert already_there(report, {"torch": "2.11.0"}, "3.12") == {"torch", "cuda-toolkit", "nvidia-cufft", "numpy"}


def test_parts_are_bounded_summed_and_unpack_to_the_checked_wheels(tmp_path):
    wheels, out, back = tmp_path / "wheels", tmp_path / "out", tmp_path / "back"
    for d in (wheels, out, back):
        d.mkdir()
    records = []
    for name, size in (("a-1-py3-none-any.whl", 9000), ("b-2-py3-none-any.whl", 3000)):
        (wheels / name).write_bytes(os.urandom(size))
        records.append({"name": name[0], "version": "1", "file": name, "sha256": sha256(wheels / name), "bytes": size})
    parts = pack(wheels, {"requirement": "xlt", "wheels": records}, out, "xlt-wheelhouse-py312", 4096)
    assert len(parts) > 3 and all(p.stat().st_size <= 4096 for p in parts)
    assert [line.split("  ")[1] for line in (out / SUMS).read_text().splitlines()] == [p.name for p in parts]
    assert json.loads((out / MANIFEST).read_text())["parts"][0]["sha256"] == sha256(parts[0])

    assert unpack(out, back)["wheels"] == records
    assert all((back / r["file"]).read_bytes() == (wheels / r["file"]).read_bytes() for r in records)

    damaged = bytearray(parts[1].read_bytes())
    damaged[100] ^= 1
    parts[1].write_bytes(bytes(damaged))
    with pytest.raises(ValueError, match=rf"{SUMS}:2: part {parts[1].name} is damaged"):
        unpack(out, tmp_path)
    parts[1].unlink()
    with pytest.raises(FileNotFoundError, match=rf"{SUMS}:2: part {parts[1].name} is missing"):
        unpack(out, tmp_path)
