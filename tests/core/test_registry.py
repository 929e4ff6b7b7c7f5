"""The registry over the real installed distributions and their real entry points."""

from __future__ import annotations

import importlib.metadata as metadata
import tomllib

import pytest

from atoll.core.records import Kind, Registration
from atoll.core.registry import Registry, RegistryError, UnknownName, collect, load, plugin_manager

MEMBERS = {
    "atoll-core": "atoll.core.plugin",
    "atoll-guidance-ttt": "atoll.guidance_ttt.plugin",
    "atoll-pi-docker": "atoll.pi.plugin",
    "atoll-euler": "atoll.euler.plugin",
    "atoll-pi-train": "atoll.pi_train.plugin",
    "atoll-frontiercs-judge": "atoll.judge.plugin",
    "atoll-checker": "atoll.checker.plugin",
    "atoll-discovery": "atoll.discovery.plugin",
    "atoll-frontiersmith": "atoll.frontiersmith.plugin",
    "atoll-reef-stack": "atoll.stack.plugin",
}


def test_every_workspace_member_is_installed_with_its_hook_module(repo):
    root = tomllib.loads((repo / "pyproject.toml").read_text())
    members = root["tool"]["uv"]["workspace"]["members"]
    names = {
        tomllib.loads((repo / m / "pyproject.toml").read_text())["project"]["name"] for m in members
    }
    assert names == set(MEMBERS)
    assert set(root["project"]["dependencies"]) == set(MEMBERS)
    entry_points = {
        ep.dist.metadata["Name"]: ep.value for ep in metadata.entry_points(group="atoll")
    }
    for dist, module in MEMBERS.items():
        assert entry_points.get(dist) == module


def test_no_member_ships_a_namespace_init(repo):
    for init in repo.glob("*/*/src/atoll/__init__.py"):
        pytest.fail(f"{init.relative_to(repo)} breaks the PEP 420 namespace `atoll`")


def test_pluggy_loads_every_member_hook_module():
    assert set(MEMBERS) <= plugin_manager().distributions()


def test_records_are_stamped_with_their_distribution_and_version():
    registry = Registry(collect(plugin_manager()))
    plugins = registry.get(Kind.COMMAND, "plugins")
    assert plugins.distribution == "atoll-core"
    assert plugins.version == metadata.version("atoll-core")
    assert plugins.target == "atoll.core.plugins_cmd:app"


def test_listing_imports_no_target(monkeypatch):
    import sys

    load.cache_clear()
    before = set(sys.modules)
    registry = load()
    imported = set(sys.modules) - before
    for record in registry.all():
        if ":" in record.target:
            module = record.target.split(":", 1)[0]
            assert module not in imported, f"listing imported {module}"


def test_unknown_name_lists_the_known_ones():
    registry = Registry(
        [
            Registration("b", Kind.AGENT, "m:B", "b"),
            Registration("a", Kind.AGENT, "m:A", "a"),
        ]
    )
    with pytest.raises(UnknownName) as caught:
        registry.get(Kind.AGENT, "zzz")
    assert str(caught.value) == "unknown agent 'zzz'; known agents: a, b"


def test_two_distributions_claiming_one_name_is_an_error():
    first = Registration("x", Kind.AGENT, "m:A", "a").with_origin("dist-one", "1")
    second = Registration("x", Kind.AGENT, "n:B", "b").with_origin("dist-two", "1")
    with pytest.raises(RegistryError, match="dist-one and dist-two"):
        Registry([first, second])
