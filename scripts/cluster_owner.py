"""Who made a bridge on this machine: `up` of scripts/netns-cluster and scripts/bare-testbed writes
"<tool> <state folder>" into the bridge's alias, so that a later `up` finding the name taken can
name its owner and a test session can take down what a killed one left (conftest.py).
Standard library only: the scripts import it from their own folder."""

from __future__ import annotations

from pathlib import Path

TOOLS = ("netns-cluster", "bare-testbed")
NET = Path("/sys/class/net")


def alias(tool: str, state_dir: Path) -> str:
    """The alias `up` gives its bridge."""
    return f"{tool} {state_dir.resolve()}"


def owner_of(bridge: str) -> tuple[str, str] | None:
    """(tool, state folder) that made bridge, from its alias; None for another bridge."""
    try:
        tool, _, folder = (NET / bridge / "ifalias").read_text().strip().partition(" ")
    except OSError:
        return None
    return (tool, folder) if tool in TOOLS and folder else None


def owners() -> list[tuple[str, str, str]]:
    """(bridge, tool, state folder) of every bridge a tool made."""
    out = []
    for link in sorted(NET.iterdir()):
        owner = owner_of(link.name)
        if owner:
            out.append((link.name, *owner))
    return out


def taken_message(tool: str, what: str, bridge: str, state_dir: Path) -> str:
    """One line for a name `up` would take that something else holds, naming that owner if known."""
    owner = owner_of(bridge)
    held = f": it belongs to {owner[1]} (scripts/{owner[0]} --state-dir {owner[1]} down removes it)" if owner else ""
    return f"{tool}: {what} already exists but is not in {state_dir}{held}; choose another --prefix or remove it"
