"""Evaluating your own agent: comparisons of two sets of runs of a dataset, case by case, with
their statistics."""
