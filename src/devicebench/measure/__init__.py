"""Measuring a cell: clocks and summaries, energy, utilization, peaks, FLOPs, precision
switches, the environment and the stages of its fixed cost."""
