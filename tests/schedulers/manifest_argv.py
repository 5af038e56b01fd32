"""A variant's commands as its manifest makes them, for the tests that run a scheduler program
by hand: the manifest is the one place of every default, so the tests take their options from
it rather than restating them."""

from corun.run import schedulers


def command(variant: str, params: dict | None = None, step: str = "start", exe=None, **ctx) -> list[str]:
    """The variant's `step` command (start, verify, stop) with `params` over the manifest's
    defaults, the placeholders in `ctx` (state_dir, job_events, cpus ...) filled and, with
    `exe`, another build of its program (the ASan one) first."""
    path, fixed = schedulers.lookup(variant)
    man = schedulers.manifest(variant)
    # as Variant.load, but without its check of the programs on PATH (mpirun ...): a test of
    # the daemon alone needs none of them
    v = schedulers.Variant(variant, man, path.parent, schedulers.resolve_params(man, {**(params or {}), **fixed}))
    v.ctx = {k: str(x) for k, x in ctx.items()}
    argv = v.expand(v.manifest[step])
    if exe is not None:
        argv[0] = str(exe)
    return argv
