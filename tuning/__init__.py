"""Tuning: schedule search space, measurement, cost model and the record database."""
