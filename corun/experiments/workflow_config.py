"""The workflow configuration (workflows/config/*.yaml), checked against workflows/schemas/config.schema.json."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from corun import config
from corun.util import repo_root

SCHEMA = repo_root() / "workflows" / "schemas" / "config.schema.json"


def validate_config(cfg: Any, source: str) -> dict:
    """Defaults filled in; a bad key or value is a one-line ConfigError."""
    from corun.experiments.dynamic_io import overlay_catalog
    schema = config.load_schema(SCHEMA)
    cfg = config.validate(overlay_catalog(cfg or {}, schema), schema, source)
    exp = cfg["sensitivity_ranking"]
    if exp["cache_mode"] == "direct" and exp["block_size"] % 4096:
        from corun.errors import ConfigError
        raise ConfigError(source, "sensitivity_ranking.block_size", exp["block_size"],
                          "a multiple of 4096 with cache_mode: direct")
    if "dynamic_io" in cfg["experiments"]:
        from corun.experiments.dynamic_io import check
        check(cfg, source)
    return cfg


def load_workflow_config(path: str | Path) -> dict:
    return validate_config(config.read_document(path), str(path))
