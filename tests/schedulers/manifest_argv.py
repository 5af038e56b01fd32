"""A variant's commands as its manifest makes them, for the tests that run a scheduler program
by hand: the manifest is the one place of every default, so the tests take their options from
it rather than restating them."""

from corun.run import schedulers


def command(variant: str, params: dict | None = None, step: str = "start", exe=None, **ctx) -> list[str]:
    """The variant's `step` command with `params` over the manifest's defaults, the
    placeholders in `ctx` filled and, with `exe`, another build of its program (the ASan one)
    first."""
    argv = schedulers.command(variant, step, params, **ctx)
    if exe is not None:
        argv[0] = str(exe)
    return argv
