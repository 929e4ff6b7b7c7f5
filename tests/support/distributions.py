"""Install a small third-party plugin distribution for a test, as pip would lay it out.

A `NAME-VERSION.dist-info` directory with METADATA and entry_points.txt beside
the plugin's module, on a directory the test puts on PYTHONPATH: Python's
`importlib.metadata` (and so pluggy and Harbor) sees a real installed
distribution, without the time a real `pip install` into a venv takes.
"""

from __future__ import annotations

from pathlib import Path


def install_plugin_distribution(
    site: Path,
    name: str,
    modules: dict[str, str],
    entry_points: dict[str, dict[str, str]],
    version: str = "0.1.0",
) -> Path:
    """Write modules (`dotted.name` -> source) and the dist-info; return `site`."""
    site.mkdir(parents=True, exist_ok=True)
    for dotted, source in modules.items():
        path = site.joinpath(*dotted.split(".")).with_suffix(".py")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source, encoding="utf-8")
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n", encoding="utf-8"
    )
    lines = []
    for group, points in entry_points.items():
        lines.append(f"[{group}]")
        lines += [f"{point} = {target}" for point, target in points.items()]
        lines.append("")
    (info / "entry_points.txt").write_text("\n".join(lines), encoding="utf-8")
    (info / "RECORD").write_text("", encoding="utf-8")
    return site
