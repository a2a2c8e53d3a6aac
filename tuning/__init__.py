"""Tuning: schedule search space, measurement, cost model and the record database."""


def _spawned() -> None:
    """The target of the tuner's start-up probe (tuning/tuner.py: `check_spawn`): a spawned child that
    gets here imported the caller's main module without tuning again."""
