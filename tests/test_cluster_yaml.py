"""cluster.yaml: accepted by Ray's own autoscaler validation, and true to our cluster policy.

``ray up`` first runs ``prepare_config`` (merge with Ray's AWS defaults, fill per-type worker
bounds) and then ``validate_config`` (Ray's JSON schema, ray/autoscaler/ray-schema.json, plus
cross-field checks) before its first AWS call; the tests run those two, offline. The policy
checks read the prepared config, so a key left out of cluster.yaml and filled from Ray's
defaults (which start the dashboard on 0.0.0.0 and install a nightly wheel) is caught too.
"""

from __future__ import annotations

import copy
import re
import shlex
import tomllib
from typing import Any, Callable

import jsonschema
import pytest
import yaml
from ray.autoscaler._private.util import prepare_config, validate_config

from conftest import REPO

CLUSTER_YAML = REPO / "cluster.yaml"
COMMAND_KEYS = ("initialization_commands", "setup_commands", "head_setup_commands", "worker_setup_commands",
                "head_start_ray_commands", "worker_start_ray_commands")
IMAGE = re.compile(r"rayproject/ray:(?P<ray>\d+\.\d+\.\d+)-py(?P<py>\d{2,3})-(?P<platform>gpu|cu\d+)")


def load_raw() -> dict[str, Any]:
    return yaml.safe_load(CLUSTER_YAML.read_text())


def ray_up_checks(raw: dict[str, Any]) -> dict[str, Any]:
    """What ``ray up`` does with the file before contacting AWS; returns the prepared config."""
    config = prepare_config(copy.deepcopy(raw))
    validate_config(config)
    return config


@pytest.fixture(scope="module")
def config() -> dict[str, Any]:
    return ray_up_checks(load_raw())


def pyproject_pins() -> dict[str, str]:
    """``name -> version`` of pyproject.toml's ``name[extras]==version`` dependencies."""
    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    pins = {}
    for dep in deps:
        name, _, version = dep.partition("==")
        pins[name.split("[")[0].strip().lower()] = version.strip()
    return pins


def commands(config: dict[str, Any]) -> list[str]:
    """Every shell command the launcher runs, node-type overrides included."""
    out = [c for key in COMMAND_KEYS for c in config.get(key, [])]
    for node_type in config["available_node_types"].values():
        out += node_type.get("initialization_commands", []) + node_type.get("worker_setup_commands", [])
    return out


def pip_install_args(command: str) -> list[str]:
    """The requirement / path arguments of every ``pip install`` in a shell command."""
    args = []
    for part in re.split(r"&&|;|\|\|", command):
        words = shlex.split(part)
        for i in range(len(words) - 1):
            if words[i].endswith("pip") and words[i + 1] == "install":
                args += [w for w in words[i + 2:] if not w.startswith("-")]
    return args


def worker_types(config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in config["available_node_types"].items() if k != config["head_node_type"]}


def test_ray_accepts_the_config(config):
    assert config["head_node_type"] in config["available_node_types"]
    assert config["available_node_types"][config["head_node_type"]]["max_workers"] == 0  # filled by Ray


def _rename(key: str, new: str) -> Callable[[dict], None]:
    return lambda c: c.__setitem__(new, c.pop(key))


@pytest.mark.parametrize("mutate, error, match", [
    pytest.param(_rename("max_workers", "max_worker"), jsonschema.ValidationError, "max_worker",
                 id="misspelled-top-level-key"),
    pytest.param(lambda c: c["available_node_types"]["gpu_worker"].pop("resources"), jsonschema.ValidationError,
                 "resources", id="node-type-without-resources"),
    pytest.param(lambda c: c["available_node_types"]["gpu_worker"]["resources"].update(GPU="1"),
                 jsonschema.ValidationError, "'1'", id="resource-count-as-string"),
    pytest.param(lambda c: c.__setitem__("head_node_type", "cpu_head"), ValueError, "head_node_type",
                 id="head-type-not-declared"),
    pytest.param(lambda c: c["available_node_types"]["gpu_worker"].update(min_workers=5), ValueError,
                 "max_workers", id="min-workers-above-global-max"),
])
def test_ray_rejects_a_broken_config(mutate, error, match):
    raw = load_raw()
    ray_up_checks(raw)  # the unmodified file passes, so the failure below is the mutation's
    mutate(raw)
    with pytest.raises(error, match=match):
        ray_up_checks(raw)


def test_head_takes_no_work(config):
    head = config["available_node_types"][config["head_node_type"]]
    assert head["resources"].get("CPU") == 0, "the head must advertise CPU: 0 so no task or actor lands on it"
    assert head["resources"].get("GPU", 0) == 0
    assert head.get("min_workers", 0) == 0 and head["max_workers"] == 0


def test_workers_have_gpus_and_scale_to_zero(config):
    workers = worker_types(config)
    assert workers, "no worker node type"
    for name, node_type in workers.items():
        assert node_type["resources"].get("GPU", 0) >= 1, name
        assert node_type["min_workers"] == 0, f"{name}: GPUs billed while idle"
        assert 1 <= node_type["max_workers"] <= config["max_workers"], name
    assert config["idle_timeout_minutes"] > 0


def test_every_node_has_an_instance_profile(config):
    """Checkpoints go to S3 from the workers (Ray Train); the head launches them."""
    for name, node_type in config["available_node_types"].items():
        assert node_type["node_config"].get("IamInstanceProfile"), name


def test_versions_pinned_as_in_pyproject(config):
    pins = pyproject_pins()
    image = IMAGE.fullmatch(config["docker"]["image"])
    assert image, f"docker.image {config['docker']['image']!r} is not a versioned rayproject/ray GPU tag"
    assert image["ray"] == pins["ray"]
    assert not {"head_image", "worker_image"} & set(config["docker"]), "one image for every node"

    installed = [arg for c in commands(config) for arg in pip_install_args(c)]
    assert f"torch=={re.search(r'torch==([0-9.]+)', (REPO / 'Makefile').read_text())[1]}" in installed  # the Makefile's
    for arg in installed:
        assert "==" in arg or arg.startswith(("~/", "/", "./", "$HOME/")), f"unpinned pip install argument {arg!r}"
    # The project itself comes from the repo mounted at ~/xlt, with every extra at the exact versions make
    # install takes (its -c file); then the gpu extra's faiss, as pinned there.
    project = "$HOME/xlt[all]"
    assert config["file_mounts"]["~/xlt"] == "." and project in installed
    assert installed[installed.index(project) + 1] == "~/xlt/configs/install/dev.txt"
    (faiss_gpu,) = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]["gpu"]
    assert installed[-1] == faiss_gpu and installed.index(project) < len(installed) - 2


def test_no_nightly_or_swallowed_failure(config):
    for command in commands(config):
        for bad in ("nightly", "latest", "ray-wheels", "|| true", "git clone"):
            assert bad not in command, f"{bad!r} in {command!r}"


def test_dashboard_not_public(config):
    head_start = " ".join(config["head_start_ray_commands"])
    hosts = re.findall(r"--dashboard-host[= ](\S+)", head_start)
    assert hosts and set(hosts) <= {"127.0.0.1", "localhost"}, hosts
    everything = " ".join(commands(config) + config["docker"].get("run_options", []))
    assert "0.0.0.0" not in everything
    for rule in config["provider"].get("security_group", {}).get("IpPermissions", []):
        sources = {r.get("CidrIp") for r in rule.get("IpRanges", [])}
        sources |= {r.get("CidrIpv6") for r in rule.get("Ipv6Ranges", [])}
        if {"0.0.0.0/0", "::/0"} & sources:
            assert rule.get("FromPort") == rule.get("ToPort") == 22, f"open to the world: {rule}"
